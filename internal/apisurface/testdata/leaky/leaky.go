// Package leaky declares each kind of exported name of an internal
// package that TestNoInternalNames refuses, and the declarations it lets
// through (unexported ones, bodies, unexported fields).
package leaky

import (
	"github.com/lockwatch/lockwatch/internal/obs"
)

type Alias = obs.LossReason

type Defined obs.Telemetry

type Fields struct {
	Rec  *obs.Recorder
	hide obs.Recorder
}

func Func(c obs.Config) *obs.Recorder { return obs.New(c) }

func (Fields) Method() obs.Recorder { return obs.Recorder{} }

func (Fields) hidden() obs.Recorder { return obs.Recorder{} }

const Value = obs.LossClosed

const hidden = obs.LossClosed

type private obs.Telemetry

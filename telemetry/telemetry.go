package telemetry

import (
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Telemetry records lockwatch's signals, safe for concurrent use (package
// doc). The zero value is not usable; call New.
type Telemetry struct{ rec *obs.Recorder }

// New creates the instruments on c's providers; a provider's error goes to
// the OpenTelemetry error handler, and that instrument records nothing.
func New(c Config) *Telemetry {
	return &Telemetry{rec: obs.New(obs.Config(c))}
}

// recorderOf is obs.TelemetryRecorder: a value of any other type than
// *Telemetry is a lockwatch defect, and panics.
func recorderOf(t any) *obs.Recorder {
	if t == nil {
		return nil
	}
	if tel := t.(*Telemetry); tel != nil {
		return tel.rec
	}
	return nil
}

func init() { obs.TelemetryRecorder = recorderOf }

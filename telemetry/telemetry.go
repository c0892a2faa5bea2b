package telemetry

import (
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Telemetry records lockwatch's signals, safe for concurrent use (package
// doc). The zero value is not usable; call New.
type Telemetry obs.Telemetry

// New creates the instruments on c's providers; a provider's error goes to
// the OpenTelemetry error handler, and that instrument records nothing.
func New(c Config) *Telemetry {
	t := Telemetry(obs.NewTelemetry(obs.New(obs.Config(c))))
	return &t
}

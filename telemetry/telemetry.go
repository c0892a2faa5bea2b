package telemetry

import (
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Telemetry is where lockwatch records its signals: the providers and
// logger it was made with, and the instruments created on them. It is safe
// for concurrent use; share one between a Locker (lease.WithTelemetry) and
// fenced stores (fence.WithTelemetry, fence.TableConfig); the middleware
// records through the lease's. The zero value is not usable; call New.
type Telemetry obs.Telemetry

// New creates the instruments on the configured providers. Errors from the
// providers (which the API only reports for invalid names) go to the global
// OpenTelemetry error handler, as in the OTel contrib instrumentations; the
// instrument concerned then records nothing.
func New(opts ...Option) *Telemetry {
	c := newConfig(opts)
	rec := obs.New(obs.Config{TracerProvider: c.tp, MeterProvider: c.mp, Logger: c.logger, RawKeys: c.rawKeys})
	t := Telemetry(obs.NewTelemetry(rec))
	return &t
}

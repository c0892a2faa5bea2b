package telemetry

import (
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Telemetry is where lockwatch records its signals: the providers and
// logger it was made with, and the instruments created on them. It is safe
// for concurrent use; share one between a Locker (lease.WithTelemetry) and
// fenced stores (fence.RedisConfig, fence.TableConfig); the middleware
// records through the lease's. The zero value is not usable; call New.
type Telemetry obs.Telemetry

// New creates the instruments on the providers c names (Config's zero
// value: the global ones). Errors from the providers (which the API only
// reports for invalid names) go to the global OpenTelemetry error handler,
// as in the OTel contrib instrumentations; the instrument concerned then
// records nothing.
func New(c Config) *Telemetry {
	t := Telemetry(obs.NewTelemetry(obs.New(obs.Config(c))))
	return &t
}

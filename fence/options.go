package fence

import (
	"github.com/lockwatch/lockwatch/telemetry"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// Option configures a RedisStore (NewRedisStore). The SQL tables take
// their settings in TableConfig instead: they have no namespace.
type Option interface {
	apply(*storeConfig)
}

type optionFunc func(*storeConfig)

func (f optionFunc) apply(c *storeConfig) { f(c) }

// defaultNamespace is the prefix of a RedisStore's keys when WithNamespace
// is not given.
const defaultNamespace = "lockwatch:fence"

type storeConfig struct {
	tel       *telemetry.Telemetry
	namespace string
}

// WithTelemetry sets where fence checks are recorded (the
// lockwatch.fence.checks and lockwatch.fence.rejections counters, the
// fence.check span, a Warn log per rejection). Default: telemetry.New(),
// which records to the global OpenTelemetry providers. Share one Telemetry
// between a Locker and the stores of the same process (a Table takes it as
// TableConfig.Telemetry). Nil is ignored.
func WithTelemetry(t *telemetry.Telemetry) Option {
	return optionFunc(func(c *storeConfig) {
		if t != nil {
			c.tel = t
		}
	})
}

// WithNamespace sets the prefix of a RedisStore's keys. Default
// "lockwatch:fence". Printable ASCII without spaces or braces, at most 64
// bytes: braces would let the namespace choose the Redis Cluster slot.
func WithNamespace(ns string) Option {
	return optionFunc(func(c *storeConfig) { c.namespace = ns })
}

func newStoreConfig(opts []Option) storeConfig {
	c := storeConfig{namespace: defaultNamespace}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// recorder is where a store records its checks: t's recorder, or for a nil
// t one on the global providers, as telemetry.New() would make.
func recorder(t *telemetry.Telemetry) *obs.Recorder {
	if r := obs.Of(t); r != nil {
		return r
	}
	return obs.New(obs.Config{})
}

package fence

import (
	"github.com/lockwatch/lockwatch/telemetry"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// Option configures a store: a RedisStore (NewRedisStore), a PostgresTable
// (NewPostgresTable) or a MySQLTable (NewMySQLTable).
type Option interface {
	apply(*storeConfig)
}

type optionFunc func(*storeConfig)

func (f optionFunc) apply(c *storeConfig) { f(c) }

// DefaultNamespace is the prefix of a RedisStore's keys when WithNamespace
// is not given.
const DefaultNamespace = "lockwatch:fence"

type storeConfig struct {
	tel       *obs.Recorder
	namespace string
}

// WithTelemetry sets where fence checks are recorded (the
// lockwatch.fence.checks and lockwatch.fence.rejections counters, the
// fence.check span, a Warn log per rejection). Default: telemetry.New(),
// which records to the global OpenTelemetry providers. Share one Telemetry
// between a Locker and the stores of the same process. Nil is ignored.
func WithTelemetry(t *telemetry.Telemetry) Option {
	return optionFunc(func(c *storeConfig) {
		if t != nil {
			c.tel = obs.Of(t)
		}
	})
}

// WithNamespace sets the prefix of a RedisStore's keys. Default
// DefaultNamespace ("lockwatch:fence"). Printable ASCII without spaces or
// braces, at most 64 bytes: braces would let the namespace choose the Redis
// Cluster slot. The SQL tables ignore it.
func WithNamespace(ns string) Option {
	return optionFunc(func(c *storeConfig) { c.namespace = ns })
}

func newStoreConfig(opts []Option) storeConfig {
	c := storeConfig{namespace: DefaultNamespace}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.tel == nil {
		c.tel = obs.New(obs.Config{})
	}
	return c
}

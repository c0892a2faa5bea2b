package fence

import (
	"time"

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

const defaultNamespace = "lockwatch:fence"

type storeConfig struct {
	tel       *telemetry.Telemetry
	namespace string
	policy    policy
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

// WithLockNamespace sets the lease namespace of the Lockers whose tokens
// the store checks (their lease.WithNamespace): a token's scope names its
// key within it. Default "lockwatch", lease's default.
func WithLockNamespace(ns string) Option {
	return optionFunc(func(c *storeConfig) { c.policy.lockNamespace = ns })
}

// WithSecrets makes the store refuse every token not signed with one of s
// (ErrForged): set the same secrets on the Lockers (lease.WithSecrets).
// Default: none, and an unsigned token's fence must be within the clock
// bound (WithMaxSkew). Nil is ignored.
func WithSecrets(s *Secrets) Option {
	return optionFunc(func(c *storeConfig) {
		if s != nil {
			c.policy.secrets = s
		}
	})
}

// WithPlainTokens admits plain tokens (a bare number, as clients of earlier
// versions send) beside scoped ones, held to the clock bound like any
// unsigned token. Default: refused (ErrUnscoped). It excludes WithSecrets
// (NewRedisStore panics on both). For migrating clients: SECURITY.md,
// "Migrating from plain tokens".
func WithPlainTokens() Option {
	return optionFunc(func(c *storeConfig) { c.policy.plain = true })
}

// WithMaxSkew sets how far ahead of the store's clock (its Redis's TIME) an
// unsigned token's fence may be: one further ahead is refused (ErrAhead). It
// is the most the leases' and the store's clocks may disagree, and the
// longest a forged token admitted within it can make legitimate holders
// wait. Default 10 s; it must be positive. Signed tokens are not bounded.
func WithMaxSkew(d time.Duration) Option {
	return optionFunc(func(c *storeConfig) { c.policy.maxSkew = d })
}

func newStoreConfig(opts []Option) storeConfig {
	c := storeConfig{namespace: defaultNamespace, policy: newPolicy()}
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
	if r := (*obs.Telemetry)(t).Recorder(); r != nil {
		return r
	}
	return obs.New(obs.Config{})
}

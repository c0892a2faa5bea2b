package fence

import (
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/telemetry"
)

// RedisConfig configures a RedisStore (NewRedisStore); the zero value gives
// the defaults. A Table takes the same checks and Telemetry, under the same
// names, in TableConfig: only Namespace is the RedisStore's own. A store
// takes no Locker, unlike an election or a semaphore: the resource often
// runs where no lease is held, so it is told the lease namespace and its
// Telemetry itself.
type RedisConfig struct {
	// Namespace is the prefix of the store's own keys, where it keeps each
	// key's value and mark ("<Namespace>:<resource>:{<key's hash>}"). It
	// need not match any other setting. Default "lockwatch:fence".
	// Printable ASCII without spaces or braces, at most 64 bytes: braces
	// would let the namespace choose the Redis Cluster slot.
	Namespace string
	// LockNamespace is no prefix of the store's keys: it is the
	// lease.Config.Namespace of the Lockers whose tokens the store checks,
	// from which a token's scope is derived (ScopeOf). Default
	// "lockwatch", lease's default. Set it to the holders' Namespace:
	// otherwise every one of their tokens is refused as minted for another
	// key (ErrForeign; FENCE_FOREIGN behind a Guard), counted as a foreign
	// rejection, nothing written, and the error names the lease namespace
	// the store expected. Plain tokens (PlainTokens) carry no scope, so it
	// is not checked for them.
	LockNamespace string
	// Secrets makes the store refuse every token not signed with one of
	// them (ErrForged): set the same secrets on the Lockers
	// (lease.Config.Secrets). Default (nil): none, and an unsigned token's
	// fence must be within the clock bound (MaxSkew).
	Secrets *Secrets
	// PlainTokens admits plain tokens (a bare number, as clients of
	// earlier versions send) beside scoped ones, held to the clock bound
	// like any unsigned token. Default: refused (ErrUnscoped). It excludes
	// Secrets (both are a configuration error). For migrating clients:
	// SECURITY.md, "Migrating from plain tokens".
	PlainTokens bool
	// MaxSkew is how far ahead of the store's clock (its Redis's TIME, a
	// Table's database clock) an unsigned token's fence may be: one further
	// ahead is refused (ErrAhead). It is the most the leases' and the
	// store's clocks may disagree, and the longest a forged token admitted
	// within it can make legitimate holders wait. Default (0): 10 s; a
	// negative skew is a configuration error. Signed tokens are not
	// bounded.
	MaxSkew time.Duration
	// Telemetry is where fence checks are recorded (the
	// lockwatch.fence.checks and lockwatch.fence.rejections counters, the
	// fence.check span, a Warn log per rejection). Share one between a
	// Locker and the stores of the same process. Default (nil): one on the
	// global OpenTelemetry providers, as telemetry.New makes.
	Telemetry *telemetry.Telemetry
}

const defaultNamespace = "lockwatch:fence"

// recorder is where a store records its checks: t's recorder, or for a nil
// t one on the global providers, as telemetry.New would make.
func recorder(t *telemetry.Telemetry) *obs.Recorder {
	if r := obs.RecorderOf(t); r != nil {
		return r
	}
	return obs.New(obs.Config{})
}

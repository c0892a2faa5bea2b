package lease

import (
	"reflect"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/telemetry"
)

// Config configures a Locker (NewLocker) and the Lockers derived from it
// (Locker.With). The zero Config is a valid one: a field left zero takes
// the default its comment gives, and the timings left zero scale with the
// TTL, so that setting TTL alone scales them all.
type Config struct {
	// TTL is the lease's time-to-live in Redis, rounded down to whole
	// milliseconds. Default 10s; at least 10ms, at most 100 years. Renewal
	// runs every TTL/3.
	TTL time.Duration

	// Namespace prefixes every Redis key. Default "lockwatch". Printable
	// ASCII without spaces or braces, at most 64 bytes: braces would let
	// the namespace choose the Redis Cluster slot. The same key in two
	// namespaces is two independent leases with independent fences.
	Namespace string

	// Name is the bounded lock name: the lock.name attribute of every
	// metric, span and log (a route or method name, never a per-request
	// key). Default "default".
	Name string

	// Replica is this process's name as other processes' refusals show
	// it: a contended Acquire elsewhere names the holder's replica
	// (NotAcquiredError.HolderReplica, and so the middleware's refusal,
	// which HTTP and gRPC clients read), and Inspect names it too. It
	// travels in Redis after the owner token ("<token>@<replica>"), never
	// the token itself. Default "": not named, so that nothing internal,
	// a pod's hostname say, reaches clients unless chosen here. At most
	// 64 bytes of [A-Za-z0-9._:-].
	Replica string

	// MaxHold bounds how long a lease may be held: at acquire time +
	// MaxHold the lease is lost with reason max_hold and renewal stops.
	// Default 0: no bound.
	MaxHold time.Duration

	// Wait makes Acquire wait up to Wait, and by its context, for a
	// contended key: first come, first served. The attempt that finds the
	// key held joins the key's wait queue, and the script that frees the
	// key grants it to the oldest live entry and publishes the grant, so
	// the waiter holds the lease without another round trip (Redis
	// Pub/Sub: one connection per Locker, subscribed to its own grant
	// channel, with a *redis.Client or *redis.ClusterClient; an ACL that
	// restricts channels must allow the namespace's). await.go says how
	// an entry lives and how a grant's validity is counted. The wait is
	// for contention only: a call whose result is unknown ends it with
	// ErrUnknown. Waiting callers count in lockwatch_lease_waiting, and
	// the wait's time goes into lockwatch_lease_wait_duration_seconds by
	// result (acquired, timed_out, cancelled, unknown, error). Default 0:
	// fail fast with ErrNotAcquired.
	Wait time.Duration

	// BackoffMin and BackoffMax bound the polls of a waiter that cannot
	// listen for grants (no Pub/Sub, or ReplicationAcks): the n-th sleep
	// is uniform in [0, min(max, min·2^n)). BackoffMax also bounds the
	// time between a queued waiter's refreshes, and so how late a missed
	// grant is learnt. Defaults 10ms and 500ms.
	BackoffMin, BackoffMax time.Duration

	// SafetyMargin is how long before the estimated expiry the lease is
	// cancelled when no renewal has been confirmed: the time the work has
	// to stop before another holder can get the key. Default TTL/10;
	// negative for none.
	SafetyMargin time.Duration

	// CommitHard and CommitWarn are Commit's thresholds on the validity
	// left: below CommitHard it refuses with ErrExpiring, below CommitWarn
	// it runs and is counted as near_expiry. Defaults TTL/20 and the
	// larger of TTL/4 and CommitHard (a healthy lease renewed every TTL/3
	// never drops below about half its TTL); negative for none.
	CommitHard, CommitWarn time.Duration

	// CommitTimeout bounds the final write: the context Commit gives fn
	// ends CommitTimeout after Commit decided to run fn, and nothing else
	// ends it, neither the lease's loss nor the caller's context. Default
	// 30s, whatever the TTL: the bound is for a store that stops
	// answering, and a write that outlives its lease must reach the fence
	// to be rejected there, so keep it well above the pauses the fence is
	// meant to catch.
	CommitTimeout time.Duration

	// RenewalTimeout bounds one renewal round trip; a renewal that does
	// not answer in time loses the lease (renewal_unknown), and so does
	// one whose reply comes after the cancel point. Default TTL/5.
	RenewalTimeout time.Duration

	// AcquireTimeout bounds one acquire round trip; past it the result is
	// unknown (a plain error if it was still queued for a shared pipeline:
	// nothing was sent). Default TTL/5.
	AcquireTimeout time.Duration

	// ReleaseTimeout bounds Release, ReleaseAsync's delete and the
	// clean-up of an unknown acquire, which run detached from the
	// caller's context, and an Acquire's wait for those of its key.
	// Default TTL/5: past the TTL the key is free anyway.
	ReleaseTimeout time.Duration

	// FenceRetention is how long a key's last fencing token is remembered
	// after its last acquire. Default 7 days. Tokens stay increasing
	// after the record expires (they follow the Redis server clock); the
	// record covers acquires faster than one per microsecond and clock
	// steps backwards.
	FenceRetention time.Duration

	// ReplicationAcks makes every acquire wait until that many replicas
	// acknowledged it (Redis WAIT, at most ReplicationTimeout, which must
	// then be at least 1ms). Fewer make the result unknown: the lease is
	// released and Acquire returns ErrUnknown. Default 0: no wait. Keep
	// ReplicationTimeout below the client's ReadTimeout, with which
	// go-redis reads WAIT's reply.
	ReplicationAcks    int
	ReplicationTimeout time.Duration

	// Telemetry is where metrics, spans and logs go. Default: a
	// telemetry.New on the global OpenTelemetry providers and
	// slog.Default(). Share one between a Locker and the fenced stores of
	// the same process; the middleware records through the lease's.
	Telemetry *telemetry.Telemetry

	// Secrets signs every lease's token with its active secret, so that
	// resources holding the same secrets refuse every token a Locker did
	// not mint. Default none: tokens are still scoped to their key
	// (SECURITY.md, "Secrets").
	Secrets *fence.Secrets
}

// Defaults, used where a field is zero.
const (
	defaultTTL            = 10 * time.Second
	defaultNamespace      = "lockwatch"
	defaultName           = "default"
	defaultBackoffMin     = 10 * time.Millisecond
	defaultBackoffMax     = 500 * time.Millisecond
	defaultFenceRetention = 7 * 24 * time.Hour
	defaultCommitTimeout  = 30 * time.Second
	// minTTL is the shortest TTL accepted: below it the clock-drift allowance
	// and one loopback round trip eat the lease.
	minTTL = 10 * time.Millisecond
	// forever is the longest duration a field takes. A longer wait,
	// timeout, max hold or fence retention counts as forever (about 100
	// years); a longer TTL is refused. Lease instants are durations on a
	// clock that starts with the process, and a deadline must stay a
	// representable time: longer values would wrap.
	forever = 100 * 365 * 24 * time.Hour
)

// over returns base with every field of c that is not zero put in its
// place, the way Locker.With derives a Locker. A Telemetry without a
// recorder (the zero Telemetry) counts as zero.
func (c Config) over(base Config) Config {
	if obs.RecorderOf(c.Telemetry) == nil {
		c.Telemetry = nil
	}
	b, top := reflect.ValueOf(&base).Elem(), reflect.ValueOf(c)
	for i := range top.NumField() {
		if f := top.Field(i); !f.IsZero() {
			b.Field(i).Set(f)
		}
	}
	return base
}

// withDefaults returns c with the defaults that do not depend on the TTL
// in place of its zero fields.
func (c Config) withDefaults() Config {
	return c.over(Config{
		TTL:            defaultTTL,
		Namespace:      defaultNamespace,
		Name:           defaultName,
		BackoffMin:     defaultBackoffMin,
		BackoffMax:     defaultBackoffMax,
		FenceRetention: defaultFenceRetention,
		CommitTimeout:  defaultCommitTimeout,
	})
}

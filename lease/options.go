package lease

import (
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/telemetry"
)

// Option configures a Locker (NewLocker) or one acquire (Locker.Acquire,
// where it overrides the Locker's setting for that lease only).
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config holds what the caller set. A zero duration means "derive from the
// TTL", so that WithTTL alone scales every timing with it; settings() turns
// it into the values a lease runs with.
type config struct {
	ttl            time.Duration
	namespace      string
	name           string
	maxHold        time.Duration
	wait           time.Duration
	backoffMin     time.Duration
	backoffMax     time.Duration
	safety         time.Duration
	commitHard     time.Duration
	commitWarn     time.Duration
	commitTimeout  time.Duration
	renewalTimeout time.Duration
	acquireTimeout time.Duration
	releaseTimeout time.Duration
	fenceRetention time.Duration
	ackReplicas    int
	ackTimeout     time.Duration
	tel            *telemetry.Telemetry
	secrets        *fence.Secrets
	// safetySet and friends tell an explicit zero from "derive".
	safetySet, hardSet bool
}

// Defaults, used where an option is not given.
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
	// forever is the longest duration an option takes. A longer wait,
	// timeout, max hold or fence retention counts as forever (about 100
	// years); a longer TTL is refused. Lease instants are durations on a
	// clock that starts with the process, and a deadline must stay a
	// representable time: longer values would wrap.
	forever = 100 * 365 * 24 * time.Hour
)

func defaultConfig() config {
	return config{
		ttl:            defaultTTL,
		namespace:      defaultNamespace,
		name:           defaultName,
		backoffMin:     defaultBackoffMin,
		backoffMax:     defaultBackoffMax,
		fenceRetention: defaultFenceRetention,
		commitTimeout:  defaultCommitTimeout,
	}
}

// WithTTL sets the lease time-to-live in Redis, rounded down to whole
// milliseconds. Default 10s; at least 10ms, at most 100 years. Renewal runs every
// TTL/3, and the other timings default to fractions of it.
func WithTTL(d time.Duration) Option { return optionFunc(func(c *config) { c.ttl = d }) }

// WithNamespace sets the prefix of every Redis key. Default "lockwatch".
// Printable ASCII without spaces or braces, at most 64 bytes: braces would
// let the namespace choose the Redis Cluster slot. The same key in two
// namespaces is two independent leases with independent fences.
func WithNamespace(ns string) Option { return optionFunc(func(c *config) { c.namespace = ns }) }

// WithName sets the bounded lock name: the lock.name attribute of every
// metric, span and log (a route or method name, never a per-request
// key). Default "default".
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// WithMaxHold bounds how long a lease may be held: at acquire time + d the
// lease is lost with reason max_hold and renewal stops. Default 0: no bound.
func WithMaxHold(d time.Duration) Option { return optionFunc(func(c *config) { c.maxHold = d }) }

// WithWait makes Acquire wait up to d for a contended lease, and by ctx. A
// release of the key through any Locker wakes one waiting Acquire per
// Locker at once (Redis Pub/Sub, one connection per Locker opened with its
// first wait; with a *redis.Client or *redis.ClusterClient, and, under an
// ACL that restricts channels, the namespace's channels); between
// releases, and when a notification is missed, it retries with full-jitter
// exponential backoff (see WithBackoff) capped by the holder's remaining
// TTL. Default 0: fail fast with ErrNotAcquired. The wait is for
// contention only: an attempt whose result is unknown (no answer in the
// acquire timeout, as while a primary fails over) ends it with ErrUnknown,
// as it ends an Acquire that does not wait; the caller decides whether to
// wait again (TestSentinelFailover does). From the first contended answer
// until Acquire returns, the caller counts in lockwatch_lease_waiting, and
// the wait's time goes into lockwatch_lease_wait_duration_seconds by
// result: acquired, timed_out (d passed), cancelled (ctx ended), unknown
// or error.
func WithWait(d time.Duration) Option { return optionFunc(func(c *config) { c.wait = d }) }

// WithBackoff sets the backoff bounds used while waiting: the n-th sleep is
// uniform in [0, min(max, min·2^n)). Defaults 10ms and 500ms.
func WithBackoff(min, max time.Duration) Option {
	return optionFunc(func(c *config) { c.backoffMin, c.backoffMax = min, max })
}

// WithSafetyMargin sets how long before the estimated expiry the lease is
// cancelled when no renewal has been confirmed: the time the work has to
// stop before another holder can get the key. Default TTL/10.
func WithSafetyMargin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.safety, c.safetySet = d, true })
}

// WithCommitMargins sets Commit's thresholds on the validity left: below hard
// Commit refuses with ErrExpiring; below warn it runs and is counted as
// near_expiry. Defaults TTL/20 and TTL/4 (a healthy lease renewed every TTL/3
// never drops below about half its TTL).
func WithCommitMargins(hard, warn time.Duration) Option {
	return optionFunc(func(c *config) { c.commitHard, c.commitWarn, c.hardSet = hard, warn, true })
}

// WithCommitTimeout bounds the final write: the context Commit gives fn
// ends d after Commit decided to run fn, and nothing else ends it, neither
// the lease's loss nor the caller's context. Default 30s, whatever the
// TTL. The bound is for a store that stops answering, not for the lease: a
// write that outlives its lease is what the fence is for, and it must
// reach the fence to be rejected there and counted. A holder paused for
// longer than d resumes with its write's context ended, so d is best well
// above the pauses the fence is meant to catch (a GC, a stalled VM), which
// is why it does not scale down with a short TTL. Must be positive; above
// 100 years it counts as forever.
func WithCommitTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.commitTimeout = d })
}

// WithRenewalTimeout bounds one renewal round trip; a renewal that does not
// answer in time loses the lease (renewal_unknown). Default TTL/5. A lease
// whose cancel point comes first is lost then (deadline), and a reply that
// arrives after it does not count.
func WithRenewalTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.renewalTimeout = d })
}

// WithAcquireTimeout bounds one acquire round trip; past it the result is
// unknown (or, if the acquire was still queued for a shared pipeline, a
// plain error: nothing was sent). A caller that sends a shared pipeline
// waits for all of it, up to the latest deadline among its calls. Default
// TTL/5.
func WithAcquireTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.acquireTimeout = d })
}

// WithReleaseTimeout bounds Release, ReleaseAsync's delete and the clean-up
// of an unknown acquire, which run detached from the caller's context, and
// so an Acquire's wait for a pending release or clean-up of its key (a
// clean-up first waits for the abandoned acquire's pipeline to end). Default
// TTL/5: past the TTL the key is free anyway.
func WithReleaseTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.releaseTimeout = d })
}

// WithFenceRetention sets how long a key's last fencing token is remembered
// after its last acquire. Default 7 days. Tokens stay increasing after the
// record expires too (they follow the Redis server clock); the record covers
// acquires faster than one per microsecond and clock steps backwards.
func WithFenceRetention(d time.Duration) Option {
	return optionFunc(func(c *config) { c.fenceRetention = d })
}

// WithReplicationAck makes every acquire wait until n replicas acknowledged
// it (Redis WAIT, at most timeout). Fewer acknowledgements make the result
// unknown: the lease is released and Acquire returns ErrUnknown. Default: no
// wait. Keep timeout below the client's ReadTimeout: go-redis reads the WAIT
// reply with ReadTimeout, and a read timeout is an unknown result too.
func WithReplicationAck(n int, timeout time.Duration) Option {
	return optionFunc(func(c *config) { c.ackReplicas, c.ackTimeout = n, timeout })
}

// WithTelemetry sets where metrics, spans and logs go. Default: a
// telemetry.New() made by NewLocker on the global OpenTelemetry providers and
// slog.Default(), so setting the global providers is all it takes to see
// every signal. Share one *telemetry.Telemetry between a Locker and the
// fenced stores of the same process; the middleware records through the
// lease's. Nil and the zero Telemetry are ignored.
func WithTelemetry(t *telemetry.Telemetry) Option {
	return optionFunc(func(c *config) {
		if (*obs.Telemetry)(t).Recorder() != nil {
			c.tel = t
		}
	})
}

// WithSecrets signs every lease's token with the active secret of s, so that
// resources holding the same secrets (fence.RedisConfig.Secrets,
// fence.TableConfig.Secrets) refuse every token a Locker did not mint.
// Default: none; tokens are still scoped to their key, and a resource
// without secrets holds an unsigned token's fence to its clock (SECURITY.md,
// "Secrets"). Nil is ignored.
func WithSecrets(s *fence.Secrets) Option {
	return optionFunc(func(c *config) {
		if s != nil {
			c.secrets = s
		}
	})
}

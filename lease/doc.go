// Package lease holds fenced leases on Redis: mutual exclusion between the
// replicas of a service that stays correct when a holder pauses, Redis
// stalls, or a failover loses writes — and says so when it cannot know.
//
// # Lease, not lock
//
// A Redis lock is a lease: it proves exclusivity only while its TTL runs. A
// holder can pause (GC, page fault, network stall) past the TTL while
// another replica takes the key; when it resumes, it still writes. Owner
// tokens stop it from deleting the other's key, not from writing. Renewal
// lowers the odds of such an overlap; it cannot make them zero. So the
// package does three things:
//
//  1. A lease whose renewal fails, times out or cannot be confirmed is LOST,
//     at once and for good: its context is cancelled with a cause wrapping
//     ErrLost. Cancellation happens at validity − safety margin, before Redis
//     can expire the key, so the work has time to stop before anyone else
//     can start.
//  2. An acquire whose reply is lost or late is UNKNOWN (ErrUnknown), not
//     "not acquired": the work must not run. The Locker releases the key
//     conditionally, with the same owner token, and reports how that ended.
//  3. Every lease carries a fencing token (Fence) that strictly increases per
//     key. The resource written at the end rejects tokens older than the
//     newest it accepted. Cancellation is not rollback; only this fence makes
//     a late write harmless.
//
// # The protocol
//
// One Lua script per operation, one round trip each: acquire checks the key,
// mints the fence and sets the key with PX ttl; renew and release compare the
// owner token (128 random bits) before PEXPIRE or DEL. Keys are derived by
// hashing the caller's key (see the key layout in keys.go): request input
// never chooses a Redis Cluster slot, and long or binary keys cost the same.
// The lock and fence keys share one hash tag, so the package works on a
// single node, behind Sentinel and on Redis Cluster.
//
// One scheduler per Locker renews every lease at about TTL/3 in pipelined
// batches (leases due within TTL/12 of each other share a pipeline, each
// pipeline with the full renewal timeout), and cancels each lease at its
// cancel point whether or not a renewal is in flight: a stalled Redis
// delays replies, never the loss signal. A reply that comes after a lease's
// cancel point does not count for it: LOST is final.
//
// # Cost: group commit and release off the critical path
//
// Acquires and releases of one Locker go through a group commit (on
// Cluster, one per master, so a slow master holds up only its own keys):
// while fewer than two pipelines are in flight a call is sent at once from
// the caller's goroutine (no hand-off, no batching delay; calls whose
// deadlines fall in the same millisecond share one timer); otherwise calls
// queue, and up to 1,000 of them leave in the next pipeline, sent by the
// first queued caller. The batch size follows the load: N requests locking
// at once cost a few round trips, not N. Renewals keep their own pipelines,
// so a stalled acquire never delays a renewal. No call gets less time than
// it asked for (a pipeline's deadline is the latest of its calls'), and no
// caller waits longer than its own deadline or its context: a call still
// queued then is not sent (an error, not ErrUnknown: nothing reached
// Redis), one in flight makes the acquire ErrUnknown. A caller that sends a
// pipeline for neighbours with later deadlines leaves it to finish on a
// goroutine of its own.
//
// ReleaseAsync ends a lease at once (its context is cancelled, its hold time
// taken) and deletes the key in the background, in the next shared
// pipeline; the middleware uses it, so a locked request waits for one round
// trip, not two. An Acquire of that key through the same Locker waits for
// the delete (up to the release timeout); another process finds the key
// held for that round trip (until the TTL if the delete fails). Close waits
// for releases in flight.
//
// # Timing and clocks
//
// All timing uses a clock that never jumps: CLOCK_BOOTTIME on Linux (it keeps
// running through a system suspend, unlike Go's monotonic clock), Go's
// monotonic clock elsewhere. For a command sent at t_send and
// confirmed, the key cannot expire in Redis before t_send + TTL (Redis
// starts the TTL when the command arrives, after t_send). The lease counts
// as valid until t_send + TTL − drift, with Redlock's drift allowance
// TTL/100 + 2ms for clock-rate differences, and is cancelled a safety margin
// (default TTL/10) earlier if no later renewal has been confirmed. Remaining
// reports the time left until that cancel point. Go's timers stop while the
// host is suspended, so the scheduler never sleeps more than 50ms while
// leases are held, and Err, Remaining and Commit end a lease themselves
// when they see its cancel point passed: after a resume the context ends
// within that poll, not at the next renewal.
//
// # Fencing tokens and their clock assumption
//
// A fence is max(last token for the key + 1, Redis server TIME in
// microseconds). A plain INCR counter goes back to 1 when Redis restarts
// without persistence and goes back by the missed increments when a replica
// that lagged is promoted; the TIME term keeps tokens increasing through
// both, as long as the clocks of the Redis servers agree to within the time a
// restart or failover takes. This is Kleppmann's point about Redlock turned
// into an explicit assumption: the lease alone gives no safety under clock
// jumps or pauses, the fence checked by the resource does, and the fence
// relies on server clocks only across a restart or failover, never during
// normal operation (there the stored counter decides). Tokens are below 2^53,
// exact in JSON and JavaScript.
//
// # Ambiguity, stated
//
//   - Every attempt of an Acquire (WithWait makes several) is its own claim
//     with an owner token of its own, and its validity counts from its own
//     send. A retry of an attempt (go-redis re-sends a script whose reply
//     was lost) finds its own token and returns the same fence: no second
//     lock.
//   - An attempt that has ended is barred on the key's fence record: one
//     answered "contended", a lease released, an unknown acquire cleaned up
//     (the clean-up deletes the lock if the acquire took it: released, or
//     finds it without its token: absent). A late copy of it (a re-send, a
//     command that sat in a stalled server's buffer) then cannot take the
//     key. The record keeps two lists of the key's barred tokens, the 16
//     newest releases and clean-ups and the 16 newest contended answers,
//     apart, so that waiters polling a held key do not push a release's bar
//     out. A late copy can still take the key, for one TTL with nobody
//     working under it, when 16 newer attempts of its kind on the same key
//     ended first, when the bar could not be written (the clean-up failed,
//     unresolved; Redis at maxmemory), or when a failover promoted a
//     replica that missed the bar. An Acquire through the same Locker waits
//     for the clean-up of its key's unknown acquire first.
//   - A release that finds the key gone or changed returns ErrNotHeld: the
//     lease had already expired in Redis.
//   - Commit (the final write) runs only while the lease is active and its
//     remaining validity is above a hard margin, and reports commits made
//     below a warning threshold as near_expiry.
//
// # Redis and client settings
//
// Redis 5 or later, tested on 7 (the acquire script reads TIME before it
// writes, which needs effects replication: the default since 5.0, asked
// for by the script on servers configured otherwise, refused with an
// error where it cannot be had). The server must not evict lock keys: use
// maxmemory-policy noeviction (a volatile-* policy may evict a held lock
// and let a second holder in). Locker.Check tells both at start-up. All
// Lockers of one namespace must run the same version of lockwatch's
// scripts: a fence record that lists barred tokens reads as missing to
// scripts older than the bar. A fence record lockwatch cannot have written
// (say, set by hand to "0x10") is refused with an error, and so is an
// acquire past the largest fence, 2^53 − 1: fences never repeat.
//
// For the client a Locker uses, set ContextTimeoutEnabled so that renewal,
// acquire and release deadlines also bound socket reads; otherwise a renewal against a stalled
// Redis waits for ReadTimeout (and MaxRetries retries), which was measured
// here to double the time to notice the stall. The lease is cancelled at its
// cancel point either way.
//
// Hooks run on the Locker's goroutines and must not block; Close waits for
// them, so a hook that wants to shut down calls go locker.Close(). An
// AcquireDone hook runs on the caller's goroutine; if it panics, the lease
// it reports is released before the panic goes on.
//
// # Observing
//
// Every acquire result, unknown resolution, renewal, loss, commit and
// release is recorded through the telemetry package (OpenTelemetry metrics,
// spans and Warn logs; by default on the global providers, WithTelemetry to
// choose), then passed to the caller's Hooks, with the durations that matter
// (hold time, time from loss to the end of the work). Losses are reported
// off the scheduler's goroutine, so a slow logger or hook never delays
// another lease's cancellation.
package lease

// Package lease holds fenced leases on Redis: mutual exclusion between the
// replicas of a service that stays correct when a holder pauses, Redis
// stalls or a failover loses writes, and says so when it cannot know.
//
// A Redis lock is a lease: it proves exclusivity only while its TTL runs,
// and a holder can pause past it while another replica takes the key. So
// a Locker does three things:
//
//  1. A lease whose renewal fails or cannot be confirmed in time is lost, at
//     once and for good: its Context is cancelled with a *LostError cause
//     (errors.Is ErrLost) at its cancel point, a safety margin before Redis
//     can expire the key, so the work can stop before anyone else starts.
//  2. An acquire whose reply is lost or late is unknown (ErrUnknown), not
//     "not acquired": the work must not run, and the Locker cleans the key
//     up behind it.
//  3. Every lease carries a fencing token (Fence) that strictly increases
//     per key. The resource rejects tokens older than the newest it
//     accepted (package fence): cancellation is not rollback, and only the
//     fence makes a late write harmless.
//
// Use:
//
//	locker := lease.NewLocker(client)
//	l, err := locker.Acquire(ctx, "invoice-42")
//	if err != nil { ... } // ErrNotAcquired, ErrUnknown, or nothing taken
//	defer l.Release(ctx)
//	err = l.Commit(l.Context(), func(ctx context.Context, token fence.Token) error {
//		return store.Write(ctx, "invoice-42", token, value)
//	})
//
// One NewLocker per process and client: its leases share a renewal
// scheduler and pipelines, so thousands of leases cost a few round trips
// per TTL/3. It runs on a single node and on Redis Cluster (the keys of one
// lease share a hash slot chosen by a hash of the caller's key, never by
// the key itself); a Sentinel deployment is a single node reached through
// go-redis's failover client.
//
// Redis must be 5.0 or later (or Valkey), with maxmemory-policy noeviction
// (another policy may evict a held lock) and Lua scripting (Valkey can run
// without it); Locker.Check tells all three at start-up. Set the client's
// ContextTimeoutEnabled, so that lockwatch's deadlines bound socket reads
// too: without it a renewal against a stalled Redis waits for ReadTimeout,
// and the stall is noticed later (the lease is still cancelled at its
// cancel point).
//
// What each guarantee assumes (clock rates, server clocks across a
// failover, the 16 newest barred attempts per key) is in RELIABILITY.md.
// Every acquire, clean-up, renewal, loss, commit and release is recorded
// through package telemetry (OpenTelemetry metrics, spans and Warn logs).
package lease

// Package permits bounds concurrency across the replicas of a service: a
// semaphore of N permits per key, at most N holders at once, for the N
// exports, the N calls into a rate-limited partner, the N heavy reports.
//
//	sem, err := permits.New(locker, "exports", permits.Config{Limit: 4, Wait: 5 * time.Second})
//	p, err := sem.Acquire(ctx)
//	if err != nil { ... } // lease.ErrNotAcquired, lease.ErrUnknown, or nothing taken
//	defer p.Release(ctx)
//	err = p.Commit(p.Context(), func(ctx context.Context, token fence.Token) error {
//		return store.Write(ctx, p.Key(), token, value) // the permit's own mark
//	})
//
// # A permit is a lease
//
// Permit i of key K is a lease of its own (package lease) on K's permit i:
// it expires on its own when its holder dies, is renewed by the Locker's
// scheduler, is lost (its context cancelled, with a *lease.LostError
// cause) before its key can expire, carries a fencing token of its own, and
// an Acquire whose reply is lost is unknown and cleaned up behind the
// caller. The permits of K live in K's hash slot (Redis Cluster), beside
// and apart from the exclusive lease on K. No script is the semaphore's own:
// each permit runs the lease's protocol, which the model checks per key, and
// model/permits.pml checks what this package adds, the composition: never
// more than N live holders, one permit per Acquire; model/shared.pml the
// shared leases'.
//
// # Acquiring
//
// Acquire reads the permits' locks in one round trip and tries the free
// ones in random order, without waiting. With Config.Wait and none free, it
// queues on every permit at once, first come, first served in each
// permit's queue, and takes the first granted: a release hands the permit
// to the oldest live waiter inside its script and publishes the grant, as
// for a lease (no polling). The other waits then leave their queues, and a
// permit granted to the caller meanwhile is released at once, to its next
// waiter. A waiter costs one queue entry per permit (refreshed every
// lease.Config.BackoffMax), which is why Config.Limit stops at MaxLimit.
//
// # Fencing
//
// Each permit is its own fencing domain: permit i's tokens strictly
// increase, and its token is scoped to the permit's key, Key(K, i) (what
// Permit.Key returns). A resource that the N holders write at once keeps a
// mark per permit under that key: two holders of different permits never
// reject each other, and a holder of permit i paused past its TTL is
// rejected once the next holder of permit i wrote. A resource that must
// order every holder's writes after every other's needs an exclusive lease,
// not a permit.
//
// # Changing the limit
//
// The limit is each caller's: a Semaphore with limit N uses permits 0 to
// N-1. Growing takes effect at once. Shrinking from M to N cancels nobody:
// holders of permits N to M-1 keep them until they release or lose them,
// and callers with limit N wait for a permit below N. So while the callers
// of a key disagree (a rolling change), at most the larger limit hold at
// once, and once the holders of the permits above N are gone, at most N.
//
// # Shared and exclusive leases
//
// Shared (NewShared) is many readers or one writer per key. A reader holds
// one of the key's Config.Limit permits (Read). A writer (Write) holds the
// key's own lease, whose fence is its token, and then every permit, queued
// in each permit's queue: a reader that comes later queues behind it, so a
// stream of readers cannot starve it. While a writer holds the key, the
// readers stop renewing (the process looks every third of the TTL, or
// every lease.Config.BackoffMax if shorter): each is lost, with reason
// lease.LossYielded, at its cancel point, before its key can expire, and
// the writer takes its permit when it is released or expires. So a writer
// waits, for each reader ahead of it on a permit (holding it, or queued
// before the writer came), at most a look's period, the reader's validity
// (one TTL), one refresh of its queued attempt and a round trip. A writer
// is lost when any of its leases is, and then renews none of them.
//
// Every caller of a shared lease gives the same Config.Limit: a writer
// that covered fewer permits than a reader uses would write beside it
// (model/shared.pml's WRITER_FEWER_SLOTS). The first Read or Write of a
// key records its limit in Redis, beside the key's lease, and a caller
// with another is refused; the record stays, and changing the limit takes
// stopping every caller and deleting it.
//
// The fencing contract: writers write under the key's mark with the
// writer's token, which strictly increases across writers, so a resource
// orders every writer's writes after every earlier writer's and rejects a
// deposed writer's. Readers read: a permit's token orders nothing against
// a writer, and a read is not fenced (a reader paused past its validity
// can read while a writer writes); a reader that acts on what it read
// checks its lease (Err) first, or writes through the resource's mark.
//
// # Signals
//
// The Locker's Telemetry receives the lockwatch_permits_* series (package
// telemetry lists them), labelled with Config.Name: permits held, the
// limit, callers waiting, the wait's time by result, acquires by result,
// and losses by reason, each also logged at Warn. The permits' leases
// record there too, under the semaphore's name as their lock name
// (renewals, losses, commits).
package permits

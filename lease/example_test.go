package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// addr is the Redis the examples use; the test binary points it at a
// private loopback redis-server.
var addr = "localhost:6379"

func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()

	l, err := locker.Acquire(ctx, "monthly-report")
	switch {
	case errors.Is(err, lease.ErrNotAcquired):
		fmt.Println("another replica is on it")
		return
	case errors.Is(err, lease.ErrUnknown):
		fmt.Println("Redis may or may not have granted the lease: do not run the work")
		return
	case err != nil:
		fmt.Println("error:", err)
		return
	}
	defer l.Release(ctx)

	// Long work runs on the lease's context: it is cancelled, with cause
	// lease.ErrLost, as soon as the lease cannot be proven held.
	work := l.Context()
	_ = work

	// The final write carries the fencing token; the store rejects writes
	// with a token older than the newest it has seen. Commit runs it on the
	// lease's context without its cancellation (bounded by
	// Config.CommitTimeout): a write that comes late must reach the store
	// to be rejected there.
	err = l.Commit(l.Context(), func(ctx context.Context, token fence.Token) error {
		fmt.Println("writing with a fencing token:", token.Fence > 0)
		return nil
	})
	fmt.Println("committed:", err == nil)
	// Output:
	// writing with a fencing token: true
	// committed: true
}

func ExampleLocker_Acquire_contended() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()

	first, _ := locker.Acquire(ctx, "invoice-42")
	defer first.Release(ctx)

	_, err := locker.Acquire(ctx, "invoice-42")
	var busy *lease.NotAcquiredError
	if errors.As(err, &busy) {
		fmt.Println("held by another owner:", errors.Is(err, lease.ErrNotAcquired))
		fmt.Println("retry within the TTL:", busy.HolderTTL <= 5*time.Second)
		fmt.Println("the holder is a lease of this process:", busy.HeldHere)
	}
	// Output:
	// held by another owner: true
	// retry within the TTL: true
	// the holder is a lease of this process: true
}

// Each replica names itself with Config.Replica: a replica refused a key
// learns which replica holds it, never the holder's owner token.
func ExampleConfig_replica() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	a := lease.NewLocker(client, lease.Config{Namespace: "example-replica", Replica: "orders-a"})
	defer a.Close()
	b := lease.NewLocker(client, lease.Config{Namespace: "example-replica", Replica: "orders-b"})
	defer b.Close()

	held, _ := a.Acquire(ctx, "invoice-7")
	defer held.Release(ctx)

	_, err := b.Acquire(ctx, "invoice-7")
	var busy *lease.NotAcquiredError
	if errors.As(err, &busy) {
		fmt.Println("held by", busy.HolderReplica)
	}
	// Output: held by orders-a
}

// One Locker per process, on a client whose deadlines bound socket reads;
// Check at start-up refuses a Redis that cannot hold leases safely.
func ExampleNewLocker() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second, Name: "reports"})
	defer locker.Close()
	if err := locker.Check(context.Background()); err != nil {
		fmt.Println("do not start:", err)
		return
	}
	fmt.Println("ready")
	// Output: ready
}

// Commit runs the final write only while the lease holds; the store's
// fence refuses what a lease that ended writes by any other way.
func ExampleLease_Commit() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	store := fence.NewRedisStore(client, "ledgers", fence.RedisConfig{})
	write := func(value string) func(context.Context, fence.Token) error {
		return func(ctx context.Context, token fence.Token) error {
			return store.Write(ctx, "ledger-9", token, []byte(value))
		}
	}

	old, _ := locker.Acquire(ctx, "ledger-9")
	_ = old.Release(ctx)
	l, _ := locker.Acquire(ctx, "ledger-9")
	defer l.Release(ctx)
	fmt.Println("the holder writes:", l.Commit(l.Context(), write("balance 10")))
	fmt.Println("the ended lease is refused:", errors.Is(old.Commit(ctx, write("balance 0")), lease.ErrReleased))
	fmt.Println("and fenced off at the store:", errors.Is(write("balance 0")(ctx, old.Token()), fence.ErrStale))
	// Output:
	// the holder writes: <nil>
	// the ended lease is refused: true
	// and fenced off at the store: true
}

func ExampleConfig_wait() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{})
	defer locker.Close()

	holder, _ := locker.Acquire(ctx, "nightly-compaction")
	time.AfterFunc(50*time.Millisecond, func() { _ = holder.Release(context.Background()) })

	// Wait up to a second, with jittered backoff, for the holder to finish.
	waiting, err := locker.With(lease.Config{Wait: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := waiting.Acquire(ctx, "nightly-compaction")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)
	fmt.Println("acquired after the holder released, newer fence:", l.Fence() > holder.Fence())
	// Output:
	// acquired after the holder released, newer fence: true
}

func ExampleLease_Context() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: time.Second, MaxHold: 100 * time.Millisecond})
	defer locker.Close()

	l, _ := locker.Acquire(ctx, "bounded-job")
	defer l.Release(ctx)

	<-l.Context().Done() // the work stops here when the lease ends
	var lost *lease.LostError
	if errors.As(context.Cause(l.Context()), &lost) {
		fmt.Println("lost:", lost.Reason)
	}
	// Output:
	// lost: max_hold
}

// ReleaseAsync ends the lease at once and deletes its key in the background,
// so the caller does not wait for that round trip. The next acquire of the
// key through the same Locker waits for the delete.
func ExampleLease_ReleaseAsync() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{Namespace: "example-async"})
	defer locker.Close() // waits for releases in flight

	l, err := locker.Acquire(ctx, "invoice-7")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	l.ReleaseAsync(ctx)
	fmt.Println("work ended:", errors.Is(context.Cause(l.Context()), lease.ErrReleased))

	next, err := locker.Acquire(ctx, "invoice-7")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("taken again:", next.Fence() > l.Fence())
	next.ReleaseAsync(ctx)
	// Output:
	// work ended: true
	// taken again: true
}

// With resolves its Config once: a Locker derived per kind of work acquires
// without resolving it again, and shares the client, the renewals and Close
// with the Locker it came from.
func ExampleLocker_With() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{Namespace: "example-with"})
	defer locker.Close() // closes the derived Locker too

	reports, err := locker.With(lease.Config{Name: "reports", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, key := range []string{"report-1", "report-2"} {
		l, err := reports.Acquire(ctx, key)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(l.Key(), l.Remaining() > 20*time.Second)
		_ = l.Release(ctx)
	}
	// Output:
	// report-1 true
	// report-2 true
}

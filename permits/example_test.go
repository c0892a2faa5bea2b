package permits_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
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

	// At most 2 exports at once, across every replica: an Acquire waits up
	// to 5 s, first come, first served, for a permit.
	sem, err := permits.New(locker, "exports", permits.Config{Limit: 2, Wait: 5 * time.Second})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	p, err := sem.Acquire(ctx)
	switch {
	case errors.Is(err, lease.ErrNotAcquired):
		fmt.Println("2 exports run already")
		return
	case errors.Is(err, lease.ErrUnknown):
		fmt.Println("Redis may or may not have granted a permit: do not run the work")
		return
	case err != nil:
		fmt.Println("error:", err)
		return
	}
	defer func() { _ = p.Release(ctx) }()

	// The work runs on the permit's context, cancelled when the permit is
	// lost. The final write carries the permit's token, checked at the
	// store against the mark of the permit's own key.
	err = p.Commit(p.Context(), func(ctx context.Context, token fence.Token) error {
		fmt.Println("writing with a fencing token:", token.Fence > 0)
		fmt.Println("under the permit's key:", p.Key() == permits.Key("exports", p.Index))
		return nil
	})
	fmt.Println("committed:", err == nil)
	// Output:
	// writing with a fencing token: true
	// under the permit's key: true
	// committed: true
}

func ExampleSemaphore_Acquire_contended() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	sem, _ := permits.New(locker, "partner-api", permits.Config{Limit: 1})

	first, _ := sem.Acquire(ctx)
	_, err := sem.Acquire(ctx) // Config.Wait 0: fail fast
	var busy *lease.NotAcquiredError
	fmt.Println("every permit held:", errors.As(err, &busy), errors.Is(err, lease.ErrNotAcquired))

	// The release hands the permit to the next waiter, or frees it.
	_ = first.Release(ctx)
	again, err := sem.Acquire(ctx)
	fmt.Println("acquired after the release:", err == nil, again.Index)
	_ = again.Release(ctx)
	// Output:
	// every permit held: true true
	// acquired after the release: true 0
}

// Readers share the key, up to the limit; a writer has it alone. Config.Wait
// 0 makes each call fail fast instead of queueing.
func ExampleShared() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	catalog, err := permits.NewShared(locker, "catalog", permits.Config{Limit: 2})
	if err != nil {
		fmt.Println("error:", err)
		return
	}

	r1, _ := catalog.Read(ctx)
	r2, err := catalog.Read(ctx)
	fmt.Println("two readers at once:", err == nil)
	_, err = catalog.Read(ctx)
	fmt.Println("a third reader, over the limit:", errors.Is(err, lease.ErrNotAcquired))
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)

	w, err := catalog.Write(ctx)
	fmt.Println("the writer, alone:", err == nil)
	_, err = catalog.Read(ctx)
	fmt.Println("a reader while it writes:", errors.Is(err, lease.ErrNotAcquired))
	_ = w.Release(ctx)
	// Output:
	// two readers at once: true
	// a third reader, over the limit: true
	// the writer, alone: true
	// a reader while it writes: true
}

// A resource written by the holders of several permits at once keeps a
// mark per permit, under the permit's key.
func ExampleKey() {
	fmt.Println(permits.Key("exports", 3))
	// Output: exports#3
}

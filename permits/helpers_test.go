package permits_test

import (
	"context"
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// backend is one Redis deployment the behaviour tests run against.
type backend struct {
	name   string
	client func(t *testing.T) redis.UniversalClient
}

// backends starts a single node and a 3-master cluster once per top-level
// test; every subtest uses a namespace of its own.
func backends(t *testing.T) []backend {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	return []backend{
		{"single", func(t *testing.T) redis.UniversalClient { return single.Client(t, leaseClient) }},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return cluster.Client(t, func(o *redis.ClusterOptions) { o.ContextTimeoutEnabled = true })
		}},
	}
}

// leaseClient makes a client's deadlines bound socket reads, as the lease
// package asks of a lease client.
func leaseClient(o *redis.Options) { o.ContextTimeoutEnabled = true }

var nsSeq atomic.Int64

var nsUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// testNamespace returns a lease namespace no other test uses.
func testNamespace(t testing.TB) string {
	name := nsUnsafe.ReplaceAllString(t.Name(), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return fmt.Sprintf("p%d_%s", nsSeq.Add(1), name)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newLocker returns a Locker taking cfg (Namespace required), closed when
// the test ends.
func newLocker(t testing.TB, c redis.UniversalClient, cfg lease.Config) *lease.Locker {
	require.NotEmpty(t, cfg.Namespace)
	lk := lease.NewLocker(c, cfg)
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// newSemaphore returns permits.New(lk, key, cfg), failing the test on an
// error.
func newSemaphore(t testing.TB, lk *lease.Locker, key string, cfg permits.Config) *permits.Semaphore {
	t.Helper()
	s, err := permits.New(lk, key, cfg)
	require.NoError(t, err)
	return s
}

// slots reads Redis itself: which of key's permits 0..n-1 have a lock, and
// how many waiters each permit's queue holds.
func slots(t testing.TB, c redis.UniversalClient, ns, key string, n int) (held []bool, queued []int64) {
	t.Helper()
	ctx := testCtx(t)
	for i := range n {
		k := leasekeys.OfSlot(ns, key, i)
		exists, err := c.Exists(ctx, k.Lock).Result()
		require.NoError(t, err)
		waiting, err := c.LLen(ctx, k.Queue).Result()
		require.NoError(t, err)
		held, queued = append(held, exists == 1), append(queued, waiting)
	}
	return held, queued
}

// count returns how many of bs are true.
func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// eventuallySlots waits until Redis has want permits held and want
// waiters queued in every permit's queue of key's n.
func eventuallySlots(t testing.TB, c redis.UniversalClient, ns, key string, n, wantHeld int, wantQueued int64) {
	t.Helper()
	var held []bool
	var queued []int64
	require.Eventually(t, func() bool {
		held, queued = slots(t, c, ns, key, n)
		for _, q := range queued {
			if q != wantQueued {
				return false
			}
		}
		return count(held) == wantHeld
	}, 10*time.Second, 2*time.Millisecond, "want %d held and %d queued per permit; held %v, queued %v",
		wantHeld, wantQueued, held, queued)
}

// acquired is one Acquire's result, from a goroutine.
type acquired struct {
	p   *permits.Permit
	err error
}

// acquireAsync calls s.Acquire on a goroutine and returns its result's
// channel; the test waits for the goroutine before ending.
func acquireAsync(t *testing.T, ctx context.Context, s *permits.Semaphore) <-chan acquired {
	out := make(chan acquired, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, err := s.Acquire(ctx)
		out <- acquired{p, err}
	}()
	t.Cleanup(func() { <-done })
	return out
}

// result waits for an Acquire's result.
func result(t *testing.T, ch <-chan acquired, within time.Duration) acquired {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(within):
		t.Fatalf("Acquire did not return within %v", within)
		return acquired{}
	}
}

// pending fails the test if ch already holds a result.
func pending(t *testing.T, ch <-chan acquired, why string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: Acquire returned %v, %v", why, r.p, r.err)
	default:
	}
}

package permits_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// TestBehaviour runs the semaphore's claims on a single node and on a
// cluster.
func TestBehaviour(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b backend)
	}{
		{"AtMostLimit", testAtMostLimit},
		{"ConcurrentHoldersAtMostLimit", testConcurrentHolders},
		{"WaiterWokenByRelease", testWaiterWokenByRelease},
		{"WaitersFIFO", testWaitersFIFO},
		{"OnePermitPerAcquire", testOnePermitPerAcquire},
		{"TwoFreedOneWaiterEach", testTwoFreedTwoWaiters},
		{"Shrinking", testShrinking},
		{"WaitTimesOut", testWaitTimesOut},
	}
	bs := backends(t)
	for _, b := range bs {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) { tc.fn(t, b) })
		}
	}
}

// testAtMostLimit: N Acquires take N distinct permits, the N+1th is
// contended, and a release lets the next in.
func testAtMostLimit(t *testing.T, b backend) {
	ctx, c, ns := testCtx(t), b.client(t), testNamespace(t)
	s := newSemaphore(t, newLocker(t, c, lease.Config{Namespace: ns}), "exports", permits.Config{Limit: 3})
	assert.Equal(t, 3, s.Limit())
	assert.Equal(t, "exports", s.Key())
	var held []*permits.Permit
	seen := map[int]bool{}
	for range 3 {
		p, err := s.Acquire(ctx)
		require.NoError(t, err)
		require.False(t, seen[p.Index], "permit %d twice", p.Index)
		seen[p.Index] = true
		assert.Equal(t, permits.Key("exports", p.Index), p.Key())
		assert.Equal(t, fence.ScopeOf(ns, p.Key()), p.Token().Scope, "the token is the permit's")
		held = append(held, p)
	}
	_, err := s.Acquire(ctx)
	var busy *lease.NotAcquiredError
	require.ErrorAs(t, err, &busy)
	require.ErrorIs(t, err, lease.ErrNotAcquired)
	assert.Equal(t, "exports", busy.Key)

	require.NoError(t, held[1].Release(ctx))
	p, err := s.Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, held[1].Index, p.Index, "the one free permit")
	for _, p := range append(held, p) {
		if p != held[1] {
			require.NoError(t, p.Release(ctx))
		}
	}
	eventuallySlots(t, c, ns, "exports", 3, 0, 0)
}

// testConcurrentHolders: many callers of several processes (Lockers of
// their own) take and release permits at once; live holders never exceed
// the limit, each permit's fences strictly increase, every Acquire gets a
// permit, and at the end every permit is free and every queue empty.
func testConcurrentHolders(t *testing.T, b backend) {
	const limit, processes, callers, rounds = 3, 4, 16, 5
	ctx, ns := testCtx(t), testNamespace(t)
	sems := make([]*permits.Semaphore, processes)
	for i := range sems {
		lk := newLocker(t, b.client(t), lease.Config{Namespace: ns, TTL: 5 * time.Second})
		sems[i] = newSemaphore(t, lk, "reports", permits.Config{Limit: limit, Wait: 30 * time.Second})
	}
	var live, most atomic.Int64
	var full atomic.Bool // limit holders were live at once
	var mu sync.Mutex
	fences := map[int][]int64{}
	errs := make(chan error, callers*rounds)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				p, err := sems[i%processes].Acquire(ctx)
				if err != nil {
					errs <- err
					continue
				}
				n := live.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n == limit {
					full.Store(true)
				}
				mu.Lock()
				fences[p.Index] = append(fences[p.Index], p.Fence())
				mu.Unlock()
				// Until the permits were all held once, a holder waits
				// for the others (up to a bound), so that the callers
				// contend however slowly the machine runs them.
				for until := time.Now().Add(5 * time.Second); !full.Load() && time.Now().Before(until); {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(time.Millisecond) // overlap with the other holders
				live.Add(-1)
				if err := p.Release(ctx); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, most.Load(), int64(limit), "live holders at once")
	assert.Equal(t, int64(limit), most.Load(), "the callers contended")
	total := 0
	for i, fs := range fences {
		require.Less(t, i, limit)
		total += len(fs)
		for j := 1; j < len(fs); j++ {
			require.Greater(t, fs[j], fs[j-1], "permit %d's fences: %v", i, fs)
		}
	}
	assert.Equal(t, callers*rounds, total)
	eventuallySlots(t, b.client(t), ns, "reports", limit, 0, 0)
}

// testWaiterWokenByRelease: a waiter gets the permit a release frees long
// before its queue entry's refresh (every third of the TTL, at most
// BackoffMax) could have found it: the release's grant wakes it.
func testWaiterWokenByRelease(t *testing.T, b backend) {
	ctx, c, ns := testCtx(t), b.client(t), testNamespace(t)
	slow := lease.Config{Namespace: ns, TTL: 30 * time.Second, BackoffMin: 10 * time.Second, BackoffMax: 30 * time.Second}
	holder := newSemaphore(t, newLocker(t, c, slow), "k", permits.Config{Limit: 1})
	p, err := holder.Acquire(ctx)
	require.NoError(t, err)
	waiter := newSemaphore(t, newLocker(t, b.client(t), slow), "k", permits.Config{Limit: 1, Wait: time.Minute})
	got := acquireAsync(t, ctx, waiter)
	eventuallySlots(t, c, ns, "k", 1, 1, 1)

	released := time.Now()
	require.NoError(t, p.Release(ctx))
	r := result(t, got, 5*time.Second)
	require.NoError(t, r.err)
	assert.Less(t, time.Since(released), 3*time.Second, "woken by the grant, not a refresh (10 s)")
	assert.Equal(t, 0, r.p.Index)
	assert.Greater(t, r.p.Fence(), p.Fence())
	require.NoError(t, r.p.Release(ctx))
}

// testWaitersFIFO: two waiters queue on both permits, A first; the first
// permit freed goes to A, whose other wait leaves its queue, and the second
// to B.
func testWaitersFIFO(t *testing.T, b backend) {
	ctx, c, ns := testCtx(t), b.client(t), testNamespace(t)
	cfg := lease.Config{Namespace: ns, TTL: 10 * time.Second}
	holder := newSemaphore(t, newLocker(t, c, cfg), "k", permits.Config{Limit: 2})
	h0, err := holder.Acquire(ctx)
	require.NoError(t, err)
	h1, err := holder.Acquire(ctx)
	require.NoError(t, err)
	waiting := permits.Config{Limit: 2, Wait: time.Minute}
	a := acquireAsync(t, ctx, newSemaphore(t, newLocker(t, b.client(t), cfg), "k", waiting))
	eventuallySlots(t, c, ns, "k", 2, 2, 1)
	bWaits := acquireAsync(t, ctx, newSemaphore(t, newLocker(t, b.client(t), cfg), "k", waiting))
	eventuallySlots(t, c, ns, "k", 2, 2, 2)

	require.NoError(t, h1.Release(ctx))
	ra := result(t, a, 10*time.Second)
	require.NoError(t, ra.err)
	assert.Equal(t, h1.Index, ra.p.Index)
	pending(t, bWaits, "both permits are held")
	held, queued := slots(t, c, ns, "k", 2)
	require.Equal(t, []bool{true, true}, held)
	require.NoError(t, h0.Release(ctx))
	rb := result(t, bWaits, 10*time.Second)
	require.NoError(t, rb.err)
	assert.Equal(t, h0.Index, rb.p.Index)
	t.Logf("queues after A's grant: %v", queued)
	require.NoError(t, ra.p.Release(ctx))
	require.NoError(t, rb.p.Release(ctx))
	eventuallySlots(t, c, ns, "k", 2, 0, 0)
}

// testOnePermitPerAcquire: both permits free at once while one caller
// waits on both, so both may be granted to it; it keeps one, and the other
// is released, free once it settles.
func testOnePermitPerAcquire(t *testing.T, b backend) {
	ctx, c, ns := testCtx(t), b.client(t), testNamespace(t)
	cfg := lease.Config{Namespace: ns, TTL: 10 * time.Second}
	holder := newSemaphore(t, newLocker(t, c, cfg), "k", permits.Config{Limit: 2})
	h0, err := holder.Acquire(ctx)
	require.NoError(t, err)
	h1, err := holder.Acquire(ctx)
	require.NoError(t, err)
	a := acquireAsync(t, ctx, newSemaphore(t, newLocker(t, b.client(t), cfg), "k", permits.Config{Limit: 2, Wait: time.Minute}))
	eventuallySlots(t, c, ns, "k", 2, 2, 1)

	releaseTogether(t, ctx, h0, h1)
	ra := result(t, a, 10*time.Second)
	require.NoError(t, ra.err)
	eventuallySlots(t, c, ns, "k", 2, 1, 0)
	held, _ := slots(t, c, ns, "k", 2)
	assert.True(t, held[ra.p.Index], "the caller's permit")
	require.NoError(t, ra.p.Release(ctx))
	eventuallySlots(t, c, ns, "k", 2, 0, 0)
}

// testTwoFreedTwoWaiters: both permits free at once while two callers wait
// on both: each gets one, whichever the first was granted first.
func testTwoFreedTwoWaiters(t *testing.T, b backend) {
	ctx, c, ns := testCtx(t), b.client(t), testNamespace(t)
	cfg := lease.Config{Namespace: ns, TTL: 10 * time.Second}
	holder := newSemaphore(t, newLocker(t, c, cfg), "k", permits.Config{Limit: 2})
	h0, err := holder.Acquire(ctx)
	require.NoError(t, err)
	h1, err := holder.Acquire(ctx)
	require.NoError(t, err)
	waiting := permits.Config{Limit: 2, Wait: time.Minute}
	a := acquireAsync(t, ctx, newSemaphore(t, newLocker(t, b.client(t), cfg), "k", waiting))
	eventuallySlots(t, c, ns, "k", 2, 2, 1)
	bWaits := acquireAsync(t, ctx, newSemaphore(t, newLocker(t, b.client(t), cfg), "k", waiting))
	eventuallySlots(t, c, ns, "k", 2, 2, 2)

	releaseTogether(t, ctx, h0, h1)
	ra, rb := result(t, a, 10*time.Second), result(t, bWaits, 10*time.Second)
	require.NoError(t, ra.err)
	require.NoError(t, rb.err)
	assert.NotEqual(t, ra.p.Index, rb.p.Index)
	eventuallySlots(t, c, ns, "k", 2, 2, 0)
	require.NoError(t, ra.p.Release(ctx))
	require.NoError(t, rb.p.Release(ctx))
	eventuallySlots(t, c, ns, "k", 2, 0, 0)
}

// releaseTogether releases the permits from goroutines of their own, as
// close together as the scheduler lets them run.
func releaseTogether(t *testing.T, ctx context.Context, ps ...*permits.Permit) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(ps))
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = p.Release(ctx)
		}()
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// testShrinking: with 3 permits held, a Semaphore with limit 2 waits for a
// permit below 2: permit 2's release does not admit it (the permit stays
// free), permit 0's or 1's does.
func testShrinking(t *testing.T, b backend) {
	ctx, c, ns := testCtx(t), b.client(t), testNamespace(t)
	cfg := lease.Config{Namespace: ns, TTL: 10 * time.Second}
	old := newSemaphore(t, newLocker(t, c, cfg), "k", permits.Config{Limit: 3})
	byIndex := map[int]*permits.Permit{}
	for range 3 {
		p, err := old.Acquire(ctx)
		require.NoError(t, err)
		byIndex[p.Index] = p
	}
	lk := newLocker(t, b.client(t), cfg)
	shrunk := newSemaphore(t, lk, "k", permits.Config{Limit: 2, Wait: time.Minute})
	got := acquireAsync(t, ctx, shrunk)
	eventuallySlots(t, c, ns, "k", 2, 2, 1)

	require.NoError(t, byIndex[2].Release(ctx))
	held, queued := slots(t, c, ns, "k", 3)
	assert.Equal(t, []bool{true, true, false}, held, "permit 2 is free, not handed to the waiter")
	assert.Equal(t, []int64{1, 1, 0}, queued)
	_, err := newSemaphore(t, lk, "k", permits.Config{Limit: 2}).Acquire(ctx)
	require.ErrorIs(t, err, lease.ErrNotAcquired, "limit 2 sees permits 0 and 1 only")
	pending(t, got, "permits 0 and 1 are held")

	require.NoError(t, byIndex[0].Release(ctx))
	r := result(t, got, 10*time.Second)
	require.NoError(t, r.err)
	assert.Equal(t, 0, r.p.Index)
	require.NoError(t, r.p.Release(ctx))
	require.NoError(t, byIndex[1].Release(ctx))
	eventuallySlots(t, c, ns, "k", 3, 0, 0)
}

// testWaitTimesOut: a wait that no release ends fails with
// *lease.NotAcquiredError after Config.Wait, and leaves every queue.
func testWaitTimesOut(t *testing.T, b backend) {
	ctx, c, ns := testCtx(t), b.client(t), testNamespace(t)
	cfg := lease.Config{Namespace: ns, TTL: 10 * time.Second}
	p, err := newSemaphore(t, newLocker(t, c, cfg), "k", permits.Config{Limit: 1}).Acquire(ctx)
	require.NoError(t, err)
	s := newSemaphore(t, newLocker(t, b.client(t), cfg), "k", permits.Config{Limit: 1, Wait: 200 * time.Millisecond})
	start := time.Now()
	_, err = s.Acquire(ctx)
	var busy *lease.NotAcquiredError
	require.ErrorAs(t, err, &busy)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "it waited")
	eventuallySlots(t, c, ns, "k", 1, 1, 0)
	require.NoError(t, p.Release(ctx))
}

// TestInvalid: New refuses what no Acquire could use, before sending
// anything.
func TestInvalid(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	lk := lease.NewLocker(c, lease.Config{})
	t.Cleanup(func() { _ = lk.Close(); _ = c.Close() })
	for _, tc := range []struct {
		name string
		lk   *lease.Locker
		key  string
		cfg  permits.Config
	}{
		{"zero limit", lk, "k", permits.Config{}},
		{"negative limit", lk, "k", permits.Config{Limit: -1}},
		{"limit above MaxLimit", lk, "k", permits.Config{Limit: permits.MaxLimit + 1}},
		{"negative wait", lk, "k", permits.Config{Limit: 1, Wait: -time.Second}},
		{"nil Locker", nil, "k", permits.Config{Limit: 1}},
		{"empty key", lk, "", permits.Config{Limit: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := permits.New(tc.lk, tc.key, tc.cfg)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), "permits: invalid")
		})
	}
	s, err := permits.New(lk, "k", permits.Config{Limit: permits.MaxLimit})
	require.NoError(t, err, "MaxLimit itself is valid")
	assert.Equal(t, permits.MaxLimit, s.Limit())
}

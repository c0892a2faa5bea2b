package lease

import (
	"github.com/lockwatch/lockwatch/fence"

	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acquireCounter counts the acquire scripts a client sends.
type acquireCounter struct{ n atomic.Int64 }

func (h *acquireCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *acquireCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *acquireCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}
func (h *acquireCounter) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if acquireScript.Runs(c) {
			h.n.Add(1)
		}
	}
}

// TestWakeups runs the wake-up tests on a single node and on Cluster.
func TestWakeups(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("AReleaseWakesTheWaiter", func(t *testing.T) { testAReleaseWakesTheWaiter(t, b.client(t)) })
			t.Run("OneReleaseWakesOneWaiter", func(t *testing.T) { testOneReleaseWakesOneWaiter(t, b.client(t)) })
			t.Run("AMissedReleaseFallsBackToTheBackoff", func(t *testing.T) { testAMissedRelease(t, b.client(t)) })
		})
	}
}

// testAReleaseWakesTheWaiter: with a backoff of up to 2 s, a waiter holds
// the key well within 150 ms of the release, five times in a row. By
// polling alone each of those would have a chance of about 7%.
func testAReleaseWakesTheWaiter(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, WithBackoff(2*time.Second, 2*time.Second))
	for i := range 5 {
		holder, err := lk.Acquire(ctx, "hot")
		require.NoError(t, err)
		got := make(chan *Lease, 1)
		go func() {
			l, err := lk.Acquire(ctx, "hot", WithWait(10*time.Second))
			assert.NoError(t, err)
			got <- l
		}()
		waitForWaiters(t, lk, "hot", 1)
		time.Sleep(20 * time.Millisecond) // past the retry that follows the subscription
		released := time.Now()
		require.NoError(t, holder.Release(ctx))
		l := <-got
		require.NotNil(t, l)
		assert.Less(t, time.Since(released), 150*time.Millisecond, "round %d: woken by the release, not by the backoff", i)
		assert.Greater(t, l.Fence(), holder.Fence())
		require.NoError(t, l.Release(ctx))
	}
	lk.wake.mu.Lock()
	defer lk.wake.mu.Unlock()
	assert.Empty(t, lk.wake.lines, "the last waiter unsubscribed")
}

// testOneReleaseWakesOneWaiter: 8 waiters of one key in one Locker take it
// in turn, each releasing at once. A release that woke every waiter would
// cost 8+7+...+1 = 36 attempts in wake-ups alone; one per release costs 8,
// besides each waiter's first attempt and the one after its subscription.
func testOneReleaseWakesOneWaiter(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	counter := &acquireCounter{}
	c.AddHook(counter)
	lk := newLocker(t, c, WithBackoff(5*time.Second, 5*time.Second))
	holder, err := lk.Acquire(ctx, "hot")
	require.NoError(t, err)
	const n = 8
	var wg sync.WaitGroup
	var order []fence.Token
	var mu sync.Mutex
	for range n {
		wg.Go(func() {
			l, err := lk.Acquire(ctx, "hot", WithWait(20*time.Second))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, l.Fence())
			mu.Unlock()
			assert.NoError(t, l.Release(ctx))
		})
	}
	waitForWaiters(t, lk, "hot", n)
	time.Sleep(20 * time.Millisecond)
	before := counter.n.Load()
	start := time.Now()
	require.NoError(t, holder.Release(ctx))
	wg.Wait()
	attempts := counter.n.Load() - before
	assert.Len(t, order, n)
	assert.Less(t, time.Since(start), 2*time.Second, "every hand-off was a wake-up, none a 5 s backoff")
	assert.LessOrEqual(t, attempts, int64(n+4), "one attempt per release, not one per waiter (a herd: 36)")
	t.Logf("%d hand-offs in %v, %d acquire attempts", n, time.Since(start), attempts)
}

// testAMissedRelease: a key that frees without a published release (deleted
// outside lockwatch) is still acquired within the waiter's backoff.
func testAMissedRelease(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, WithBackoff(50*time.Millisecond, 50*time.Millisecond))
	holder, err := lk.Acquire(ctx, "hot")
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l, err := lk.Acquire(ctx, "hot", WithWait(10*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	waitForWaiters(t, lk, "hot", 1)
	lockKey, _ := redisKeys(lk.set.namespace, "hot")
	deleted := time.Now()
	require.NoError(t, c.Del(ctx, lockKey).Err())
	require.NoError(t, <-got)
	assert.Less(t, time.Since(deleted), time.Second, "the 50 ms backoff bounds the wait")
	_ = holder.Release(ctx)
}

// waitForWaiters waits until n Acquires wait for key with a confirmed
// subscription.
func waitForWaiters(t *testing.T, lk *Locker, key string, n int) {
	t.Helper()
	lockKey, _ := redisKeys(lk.set.namespace, key)
	channel := releaseChannel(lockKey)
	require.Eventually(t, func() bool {
		lk.wake.mu.Lock()
		defer lk.wake.mu.Unlock()
		line := lk.wake.lines[channel]
		if line == nil || len(line.waiters) != n {
			return false
		}
		select {
		case <-line.confirmed:
			return true
		default:
			return false
		}
	}, 5*time.Second, time.Millisecond)
}

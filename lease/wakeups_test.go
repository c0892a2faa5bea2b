package lease

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// countAcquires adds a hook to c that counts the acquire scripts it sends.
func countAcquires(c redis.UniversalClient) *atomic.Int64 {
	var n atomic.Int64
	c.AddHook(hookFunc(func(cmds []redis.Cmder, send func() error) error {
		for _, cmd := range cmds {
			if acquireScript.Runs(cmd) {
				n.Add(1)
			}
		}
		return send()
	}))
	return &n
}

// TestWakeups runs the wake-up tests on a single node and on Cluster.
func TestWakeups(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("AReleaseWakesTheWaiter", func(t *testing.T) { testAReleaseWakesTheWaiter(t, b.client(t)) })
			t.Run("OneReleaseWakesOneWaiter", func(t *testing.T) { testOneReleaseWakesOneWaiter(t, b.client(t)) })
			t.Run("AMissedReleaseFallsBackToTheBackoff", func(t *testing.T) { testAMissedRelease(t, b.client(t)) })
			t.Run("ServedInArrivalOrder", func(t *testing.T) { testServedInArrivalOrder(t, b.client(t)) })
			t.Run("AGrantReachesOnlyItsLocker", func(t *testing.T) { testAGrantReachesOnlyItsLocker(t, b.client(t)) })
			t.Run("AResubscribeWakesTheWaiters", func(t *testing.T) { testAResubscribeWakesTheWaiters(t, b.client(t)) })
		})
	}
}

// testAReleaseWakesTheWaiter: with a backoff of up to 2 s, a waiter holds
// the key well within 150 ms of the release, five times in a row. By
// polling alone each of those would have a chance of about 7%.
func testAReleaseWakesTheWaiter(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{BackoffMin: 2 * time.Second, BackoffMax: 2 * time.Second})
	waiting := with(t, lk, Config{Wait: 10 * time.Second})
	for i := range 5 {
		holder, err := lk.Acquire(ctx, "hot")
		require.NoError(t, err)
		got := make(chan *Lease, 1)
		go func() {
			l, err := waiting.Acquire(ctx, "hot")
			assert.NoError(t, err)
			got <- l
		}()
		waitForWaiters(t, lk, 1)
		time.Sleep(20 * time.Millisecond) // past the refresh that follows the subscription
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
	require.Len(t, lk.wake.subs, 1, "one grant channel, kept")
	assert.Empty(t, lk.wake.subs[lk.wake.channel(lk.set.Namespace)].waiters, "every waiter left")
}

// testOneReleaseWakesOneWaiter: 8 waiters of one key in one Locker take it
// in turn, each releasing at once. A release that woke every waiter would
// cost 8+7+...+1 = 36 attempts in wake-ups alone; one per release costs 8,
// besides each waiter's first attempt and the one after its subscription.
func testOneReleaseWakesOneWaiter(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	attemptsSent := countAcquires(c)
	lk := newLocker(t, c, Config{BackoffMin: 5 * time.Second, BackoffMax: 5 * time.Second})
	holder, err := lk.Acquire(ctx, "hot")
	require.NoError(t, err)
	const n = 8
	var wg sync.WaitGroup
	var order []int64
	var mu sync.Mutex
	waiting := with(t, lk, Config{Wait: 20 * time.Second})
	for range n {
		wg.Go(func() {
			l, err := waiting.Acquire(ctx, "hot")
			if !assert.NoError(t, err) { //nolint:testifylint // on a waiter goroutine: require cannot stop the test from here
				return
			}
			mu.Lock()
			order = append(order, l.Fence())
			mu.Unlock()
			assert.NoError(t, l.Release(ctx))
		})
	}
	waitForWaiters(t, lk, n)
	time.Sleep(20 * time.Millisecond)
	before := attemptsSent.Load()
	start := time.Now()
	require.NoError(t, holder.Release(ctx))
	wg.Wait()
	attempts := attemptsSent.Load() - before
	assert.Len(t, order, n)
	assert.Less(t, time.Since(start), 2*time.Second, "every hand-off was a wake-up, none a 5 s backoff")
	assert.LessOrEqual(t, attempts, int64(n+4), "one attempt per release, not one per waiter (a herd: 36)")
	t.Logf("%d hand-offs in %v, %d acquire attempts", n, time.Since(start), attempts)
}

// testServedInArrivalOrder: waiters of one key, each in a Locker of its
// own (as in processes of their own), queued one after another, take the
// key in the order they queued, each holding it a few milliseconds, with
// fences in the same order. Waiters that raced for a release would be
// served in whatever order their retries landed.
func testServedInArrivalOrder(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	holders := newLocker(t, c, Config{})
	holder, err := holders.Acquire(ctx, "hot")
	require.NoError(t, err)
	queue := keysOf(holders.set.Namespace, "hot").Queue
	const n = 6
	var mu sync.Mutex
	var order []int
	var fences []int64
	var wg sync.WaitGroup
	for i := range n {
		lk := newLocker(t, c, Config{Namespace: holders.set.Namespace, Wait: 20 * time.Second})
		wg.Go(func() {
			l, err := lk.Acquire(ctx, "hot")
			if !assert.NoError(t, err) { //nolint:testifylint // on a waiter goroutine
				return
			}
			mu.Lock()
			order, fences = append(order, i), append(fences, l.Fence())
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			assert.NoError(t, l.Release(ctx))
		})
		require.Eventually(t, func() bool { return c.LLen(ctx, queue).Val() == int64(i+1) },
			5*time.Second, time.Millisecond, "waiter %d queued", i)
	}
	require.NoError(t, holder.Release(ctx))
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, order, "served in the order they queued")
	assert.IsIncreasing(t, fences)
	assert.Greater(t, fences[0], holder.Fence())
}

// testAMissedRelease: a key that frees without a published release (deleted
// outside lockwatch) is still acquired within the waiter's backoff.
func testAMissedRelease(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{BackoffMin: 50 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	holder, err := lk.Acquire(ctx, "hot")
	require.NoError(t, err)
	waiting := with(t, lk, Config{Wait: 10 * time.Second})
	got := make(chan error, 1)
	go func() {
		l, err := waiting.Acquire(ctx, "hot")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	waitForWaiters(t, lk, 1)
	lockKey, _ := redisKeys(lk.set.Namespace, "hot")
	deleted := time.Now()
	require.NoError(t, c.Del(ctx, lockKey).Err())
	require.NoError(t, <-got)
	assert.Less(t, time.Since(deleted), time.Second, "the 50 ms backoff bounds the wait")
	_ = holder.Release(ctx)
}

// TestAReleaseNobodyWaitsForPublishesNothing: only a key an Acquire may
// wait for is published on release (on Cluster a PUBLISH goes to every
// node); a waited-for one is.
func TestAReleaseNobodyWaitsForPublishesNothing(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{})
	publishes := func() int64 { return commandCalls(t, c, "publish") }
	for range 20 {
		l, err := lk.Acquire(ctx, "quiet")
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
	_, err := with(t, lk, Config{Wait: time.Millisecond}).Acquire(ctx, "quiet") // not contended: marks nothing
	require.NoError(t, err)
	assert.Zero(t, publishes(), "20 releases nobody waited for")

	holder, err := lk.Acquire(ctx, "waited")
	require.NoError(t, err)
	// Released while the caller still waits in the queue: the release
	// grants it the key and publishes the grant.
	waiting := with(t, lk, Config{Wait: 5 * time.Second})
	waited := make(chan *Lease, 1)
	go func() {
		l, err := waiting.Acquire(ctx, "waited")
		assert.NoError(t, err)
		waited <- l
	}()
	queue := keysOf(lk.set.Namespace, "waited").Queue
	require.Eventually(t, func() bool { return c.LLen(ctx, queue).Val() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, holder.Release(ctx))
	woken := <-waited
	require.NotNil(t, woken)
	assert.EqualValues(t, 1, publishes(), "the grant to the caller that waited")
	require.NoError(t, woken.Release(ctx))
}

// TestARefusedPublishChangesNothingButTheWait: under an ACL user without
// Pub/Sub channels, Release still succeeds and bars its token, and a
// waiter still gets the key, by its backoff.
func TestARefusedPublishChangesNothingButTheWait(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	require.NoError(t, srv.Client(t).Do(ctx, "ACL", "SETUSER", "limited", "on", ">pw", "~*", "+@all", "resetchannels").Err())
	c := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "limited", "pw" })
	lk := newLocker(t, c, Config{BackoffMin: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	holder, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	waiting := with(t, lk, Config{Wait: 5 * time.Second})
	got := make(chan error, 1)
	go func() {
		l, err := waiting.Acquire(ctx, "k")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter has marked the key and polls
	require.NoError(t, holder.Release(ctx), "the refused PUBLISH comes after the delete and the bar")
	require.NoError(t, <-got)
	_, fenceKey := redisKeys(lk.set.Namespace, "k")
	assert.Contains(t, c.Get(ctx, fenceKey).Val(), "+", "the released tokens are barred, marked deleted by their release")
}

// TestAGrantGoesToItsOwner: a grant message reaches the waiter of its
// owner token only, also one that joins after the message came (its
// enqueue answered after the grant), and nothing else is a grant.
func TestAGrantGoesToItsOwner(t *testing.T) {
	w := newWakeups(redistest.Start(t).Client(t))
	defer w.close()
	ctx := testCtx(t)
	ch := w.channel("ns")
	a := w.join(ctx, ch, "owner-a")
	b := w.join(ctx, ch, "owner-b")
	w.deliver(ch, "owner-b 17")
	require.Empty(t, a.grant)
	require.Len(t, b.grant, 1)
	assert.Equal(t, int64(17), <-b.grant)
	w.deliver(ch, "owner-b 17") // a copy of the message
	w.deliver(ch, "owner-b 17")
	assert.Len(t, b.grant, 1, "a copy never blocks the reader")

	w.deliver(ch, "owner-c 18")
	w.deliver("ns:{other}:g", "owner-a 19") // not a channel of w's
	for _, bad := range []string{"", "owner-a", "owner-a x", "owner-a 0", "owner-a -3"} {
		w.deliver(ch, bad)
	}
	assert.Empty(t, a.grant, "not grants")
	c := w.join(ctx, ch, "owner-c")
	require.Len(t, c.grant, 1, "a grant that came before its owner joined")
	assert.Equal(t, int64(18), <-c.grant)

	w.leave(a)
	w.leave(b)
	w.leave(c)
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.subs[ch].waiters)
}

// TestWakeupsNeedAClientOrClusterClient: with another client (a Ring),
// waiters poll instead of subscribing, and still get the key.
func TestWakeupsNeedAClientOrClusterClient(t *testing.T) {
	srv := redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	ctx := testCtx(t)
	lk := newLocker(t, ring, Config{BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	holder, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, func() { _ = holder.Release(context.Background()) })
	l, err := with(t, lk, Config{Wait: 5 * time.Second}).Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// TestCloseEndsAWaitAtOnce: Close wakes the Locker's waiters, which
// return ErrClosed instead of sleeping out their backoff.
func TestCloseEndsAWaitAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	lk := NewLocker(srv.Client(t), Config{Namespace: testNamespace(t), BackoffMin: 3 * time.Second, BackoffMax: 3 * time.Second})
	holder, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	waiting := with(t, lk, Config{Wait: 10 * time.Second})
	got := make(chan error, 1)
	go func() {
		_, err := waiting.Acquire(ctx, "k")
		got <- err
	}()
	waitForWaiters(t, lk, 1)
	time.Sleep(20 * time.Millisecond)
	closed := time.Now()
	require.NoError(t, lk.Close())
	require.ErrorIs(t, <-got, ErrClosed)
	assert.Less(t, time.Since(closed), 500*time.Millisecond, "not after a 3 s backoff")
	_ = holder
}

// waitForWaiters waits until n Acquires of lk wait on its grant channel,
// its subscription confirmed.
func waitForWaiters(t *testing.T, lk *Locker, n int) {
	t.Helper()
	channel := lk.wake.channel(lk.set.Namespace)
	require.Eventually(t, func() bool {
		lk.wake.mu.Lock()
		defer lk.wake.mu.Unlock()
		sub := lk.wake.subs[channel]
		return sub != nil && sub.confirmed && len(sub.waiters) == n
	}, 5*time.Second, time.Millisecond)
}

// commandCalls is how many times the server c talks to ran command name
// (INFO commandstats): it counts what no go-redis hook sees, the Pub/Sub
// connection's SUBSCRIBEs and the scripts' PUBLISHes.
func commandCalls(t *testing.T, c *redis.Client, name string) int64 {
	t.Helper()
	for line := range strings.SplitSeq(c.Info(testCtx(t), "commandstats").Val(), "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":calls="); ok {
			n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			require.NoError(t, err, line)
			return n
		}
	}
	return 0
}

// TestALockerSubscribesOnce: a Locker's waits share one subscription, to
// its grant channel, made at its first wait and kept: four waits, each
// queued and granted, send one SUBSCRIBE and no UNSUBSCRIBE.
func TestALockerSubscribesOnce(t *testing.T) {
	c := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	holders := newLocker(t, c, Config{})
	waiting := newLocker(t, c, Config{Namespace: holders.set.Namespace, Wait: 20 * time.Second})
	for range 4 {
		holder, err := holders.Acquire(ctx, "k")
		require.NoError(t, err)
		got := make(chan *Lease, 1)
		go func() {
			l, err := waiting.Acquire(ctx, "k")
			assert.NoError(t, err)
			got <- l
		}()
		waitForWaiters(t, waiting, 1)
		require.NoError(t, holder.Release(ctx))
		l := <-got
		require.NotNil(t, l)
		require.NoError(t, l.Release(ctx))
	}
	assert.EqualValues(t, 1, commandCalls(t, c, "subscribe"), "the first wait subscribes, the others do not")
	assert.Zero(t, commandCalls(t, c, "unsubscribe"))
	assert.EqualValues(t, 4, commandCalls(t, c, "publish"), "one grant per wait")
}

// testAGrantReachesOnlyItsLocker: two Lockers (as in processes of their
// own) wait, each on a key of its own. Each release publishes one message,
// on the grant channel of the granted waiter's Locker: a subscriber to
// every grant channel of the namespace sees A's grant on A's channel, then
// B's on B's, and B's subscription never got a message for anyone else
// (none is kept for a waiter yet to join).
func testAGrantReachesOnlyItsLocker(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	holders := newLocker(t, c, Config{})
	ns := holders.set.Namespace
	a := newLocker(t, c, Config{Namespace: ns, Wait: 20 * time.Second})
	b := newLocker(t, c, Config{Namespace: ns, Wait: 20 * time.Second})
	spy := c.PSubscribe(ctx, leasekeys.GrantChannel(ns, "*"))
	t.Cleanup(func() { _ = spy.Close() })
	_, err := spy.Receive(ctx)
	require.NoError(t, err)
	leases, held := map[string]chan *Lease{}, map[string]*Lease{}
	for key, lk := range map[string]*Locker{"a": a, "b": b} {
		holder, err := holders.Acquire(ctx, key)
		require.NoError(t, err)
		held[key] = holder
		got := make(chan *Lease, 1)
		leases[key] = got
		go func() {
			l, err := lk.Acquire(ctx, key)
			assert.NoError(t, err)
			got <- l
		}()
		waitForWaiters(t, lk, 1)
	}
	require.NotEqual(t, a.wake.channel(ns), b.wake.channel(ns))
	for _, key := range []string{"a", "b"} {
		lk := map[string]*Locker{"a": a, "b": b}[key]
		require.NoError(t, held[key].Release(ctx))
		l := <-leases[key]
		require.NotNil(t, l)
		msg, err := spy.ReceiveMessage(ctx)
		require.NoError(t, err)
		assert.Equal(t, lk.wake.channel(ns), msg.Channel, "%s's grant on its Locker's channel", key)
		require.NoError(t, l.Release(ctx))
	}
	b.wake.mu.Lock()
	defer b.wake.mu.Unlock()
	assert.Equal(t, [earlyGrants]earlyGrant{}, b.wake.subs[b.wake.channel(ns)].early, "B got no grant but its own")
}

// testAResubscribeWakesTheWaiters: when the grant connection reconnects
// (killed here), go-redis subscribes again, and its confirmation wakes the
// waiters to refresh at once: a grant published while it was down reached
// nobody.
func testAResubscribeWakesTheWaiters(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	w := newWakeups(c)
	defer w.close()
	wt := w.join(ctx, w.channel("ns"), "owner")
	require.NotNil(t, wt)
	select {
	case <-wt.wake: // the first confirmation
	case <-time.After(10 * time.Second):
		t.Fatal("no confirmation of the subscription")
	}
	kill := func(ctx context.Context, node *redis.Client) error {
		return node.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err()
	}
	if cl, ok := c.(*redis.ClusterClient); ok {
		require.NoError(t, cl.ForEachShard(ctx, kill))
	} else {
		require.NoError(t, kill(ctx, c.(*redis.Client)))
	}
	select {
	case <-wt.wake:
	case <-time.After(10 * time.Second):
		t.Fatal("the resubscribe did not wake the waiter")
	}
}

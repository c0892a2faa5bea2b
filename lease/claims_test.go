package lease

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// Every attempt is its own claim: a retry or a late copy of an attempt
// (a go-redis re-send on another connection, a command that sat in a
// stalled server's buffer) must never make a lease believe in more
// validity than its key has in Redis, nor take a key after its answer was
// given. These tests deliver such copies for real: they capture an
// acquire's exact command and send it again later on another connection.

// acquireTap records the arguments of every acquire script a client sends
// and can run a function after a chosen one has been answered.
type acquireTap struct {
	mu    sync.Mutex
	sent  [][]any
	after func(n int) // called after the n-th acquire (from 1) was answered
}

func (a *acquireTap) DialHook(next redis.DialHook) redis.DialHook { return next }
func (a *acquireTap) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !acquireScript.Runs(cmd) {
			return next(ctx, cmd)
		}
		err := next(ctx, cmd)
		a.mu.Lock()
		a.sent = append(a.sent, slices.Clone(cmd.Args()))
		n, after := len(a.sent), a.after
		a.mu.Unlock()
		if after != nil {
			after(n)
		}
		return err
	}
}
func (a *acquireTap) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (a *acquireTap) args(n int) []any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.sent[n-1])
}

// deliverAgain sends a captured acquire again, as a late copy of it would
// arrive, on a connection of another client. Nobody reads a late copy's
// reply; the test returns it so it can say what the copy did.
func deliverAgain(ctx context.Context, t *testing.T, c redis.UniversalClient, args []any) []any {
	t.Helper()
	reply, err := c.Do(ctx, args...).Slice()
	require.NoError(t, err)
	return reply
}

func TestClaims(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				run  func(t *testing.T, b backend)
			}{
				{"LateCopyOfAWaitersFirstAttemptGivesNoExtraValidity", testLateCopyOfAWaitersFirstAttempt},
				{"LateCopyOfAContendedAcquireCannotTakeTheKey", testLateCopyOfAContendedAcquire},
				{"LateCopyOfAReleasedAcquireCannotRetakeTheKey", testLateCopyOfAReleasedAcquire},
				{"AcquireAfterAnUnknownWaitsForItsCleanUp", testAcquireAfterAnUnknownWaitsForItsCleanUp},
				{"ContendedAnswersDoNotPushOutAReleasesBar", testContendedAnswersDoNotPushOutAReleasesBar},
			} {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, b) })
			}
		})
	}
}

// A waiter's first attempt finds the key held. The holder releases, and a
// late copy of that first attempt reaches Redis and takes the key at a1;
// the waiter's next attempt, sent well after a1, must not count validity
// from its own send: the key expires at a1 + TTL.
func testLateCopyOfAWaitersFirstAttempt(t *testing.T, b backend) {
	ctx := testCtx(t)
	ttl := 3 * time.Second
	holderLk := newLocker(t, b.client(t), Config{TTL: ttl})
	holder, err := holderLk.Acquire(ctx, "k")
	require.NoError(t, err)

	c := b.client(t)
	tap := &acquireTap{}
	c.AddHook(tap)
	waiterLk := NewLocker(c, Config{Namespace: holderLk.set.Namespace, TTL: ttl})
	t.Cleanup(func() { _ = waiterLk.Close() })
	other := b.client(t)
	var copyReply []any
	tap.after = func(n int) {
		if n != 1 {
			return
		}
		// Attempt 1 was answered "contended". Now the holder leaves, the
		// late copy lands, and time passes before attempt 2 is sent.
		require.NoError(t, holder.Release(ctx))
		copyReply = deliverAgain(ctx, t, other, tap.args(1))
		time.Sleep(600 * time.Millisecond)
	}
	l, err := with(t, waiterLk, Config{Wait: 5 * time.Second, BackoffMin: time.Millisecond, BackoffMax: time.Millisecond}).Acquire(ctx, "k")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()
	t.Logf("late copy of attempt 1 answered %v", copyReply)

	lockKey, _ := redisKeys(holderLk.set.Namespace, "k")
	pttl := other.PTTL(ctx, lockKey).Val()
	rem := l.Remaining()
	require.Positive(t, pttl, "the waiter holds the key")
	assert.Less(t, rem, pttl, "the lease's context must end before the key can expire (remaining %v, key's TTL %v)", rem, pttl)
}

// An acquire answered "contended" is final: a copy of it that arrives
// after the holder left must not take the key (nobody would work under
// it, and every other replica would find it held for a TTL).
func testLateCopyOfAContendedAcquire(t *testing.T, b backend) {
	ctx := testCtx(t)
	holderLk := newLocker(t, b.client(t), Config{})
	holder, err := holderLk.Acquire(ctx, "k")
	require.NoError(t, err)

	c := b.client(t)
	tap := &acquireTap{}
	c.AddHook(tap)
	lk := NewLocker(c, Config{Namespace: holderLk.set.Namespace})
	t.Cleanup(func() { _ = lk.Close() })
	_, err = lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired)

	require.NoError(t, holder.Release(ctx))
	other := b.client(t)
	reply := deliverAgain(ctx, t, other, tap.args(1))
	assert.NotEqualValues(t, 1, reply[0], "the late copy took the key: %v", reply)
	next, err := holderLk.Acquire(ctx, "k")
	require.NoError(t, err, "the key must be free for the next acquirer")
	require.NoError(t, next.Release(ctx))
}

// A copy of an acquire that succeeded, arriving after the lease was
// released, must not take the key again.
func testLateCopyOfAReleasedAcquire(t *testing.T, b backend) {
	ctx := testCtx(t)
	c := b.client(t)
	tap := &acquireTap{}
	c.AddHook(tap)
	lk := newLocker(t, c, Config{})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	other := b.client(t)
	reply := deliverAgain(ctx, t, other, tap.args(1))
	assert.NotEqualValues(t, 1, reply[0], "the late copy took the key again: %v", reply)
	next, err := lk.Acquire(ctx, "k")
	require.NoError(t, err, "the key must be free for the next acquirer")
	assert.Greater(t, next.Fence(), l.Fence())
	require.NoError(t, next.Release(ctx))
}

// An acquire whose reply was lost took the key; its clean-up is on its
// way. The next Acquire of the key through the same Locker must wait for
// that clean-up instead of finding its own ghost and answering contended
// for a TTL.
func testAcquireAfterAnUnknownWaitsForItsCleanUp(t *testing.T, b backend) {
	ctx := testCtx(t)
	c := b.client(t)
	fault := &replyFault{resolveDelay: 200 * time.Millisecond}
	fault.dropAcquireReply.Store(true)
	c.AddHook(fault)
	o, tel := observe(t)
	lk := newLocker(t, c, Config{Telemetry: tel})
	_, err := lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrUnknown)

	fault.dropAcquireReply.Store(false)
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err, "the Locker's own unknown acquire must not block the key for a TTL")
	require.NoError(t, l.Release(ctx))
	assert.Equal(t, obs.ResolutionReleased, o.waitResolution(t))
}

// Waiters poll a held key many times a second, and each answer bars its
// attempt; those bars must not push out the bar of a released lease, or a
// late copy of its acquire could take the key once the holder leaves.
func testContendedAnswersDoNotPushOutAReleasesBar(t *testing.T, b backend) {
	ctx := testCtx(t)
	c := b.client(t)
	tap := &acquireTap{}
	c.AddHook(tap)
	lk := newLocker(t, c, Config{})
	first, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))

	holderLk := newLocker(t, b.client(t), Config{Namespace: lk.set.Namespace})
	holder, err := holderLk.Acquire(ctx, "k")
	require.NoError(t, err)
	pollers := newLocker(t, b.client(t), Config{Namespace: lk.set.Namespace})
	for range 40 {
		_, err := pollers.Acquire(ctx, "k")
		require.ErrorIs(t, err, ErrNotAcquired)
	}
	require.NoError(t, holder.Release(ctx))

	reply := deliverAgain(ctx, t, b.client(t), tap.args(1))
	assert.NotEqualValues(t, 1, reply[0], "the late copy of the released lease's acquire took the key: %v", reply)
}

// A bar never brings the fence record's expiry forward: a contender with a
// short fence retention must not make the record of a key another Locker
// keeps for longer expire (its fence and bars with it).
func TestABarKeepsTheRecordsExpiry(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	holderLk := newLocker(t, c, Config{FenceRetention: time.Hour})
	holder, err := holderLk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer func() { _ = holder.Release(ctx) }()

	contender := newLocker(t, c, Config{Namespace: holderLk.set.Namespace, TTL: time.Second, FenceRetention: time.Second})
	_, err = contender.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired)
	_, fenceKey := redisKeys(holderLk.set.Namespace, "k")
	assert.Greater(t, c.PTTL(ctx, fenceKey).Val(), 59*time.Minute, "the contender's bar shortened the record's retention")
}

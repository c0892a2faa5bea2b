package permits_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

func newShared(t testing.TB, lk *lease.Locker, key string, cfg permits.Config) *permits.Shared {
	t.Helper()
	s, err := permits.NewShared(lk, key, cfg)
	require.NoError(t, err)
	return s
}

// TestSharedReaders: readers share the key up to the limit; a writer
// without a wait is refused while one reads and leaves nothing behind.
func TestSharedReaders(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx, ns, c := testCtx(t), testNamespace(t), b.client(t)
			lk := newLocker(t, c, lease.Config{Namespace: ns})
			sh := newShared(t, lk, "doc", permits.Config{Limit: 2})
			r1, err := sh.Read(ctx)
			require.NoError(t, err)
			r2, err := sh.Read(ctx)
			require.NoError(t, err)
			_, err = sh.Read(ctx)
			require.ErrorIs(t, err, lease.ErrNotAcquired, "two readers at most")

			_, err = sh.Write(ctx)
			require.ErrorIs(t, err, lease.ErrNotAcquired, "no writer beside a reader")
			assert.Zero(t, c.Exists(ctx, leasekeys.Of(ns, "doc").Lock).Val(), "the refused writer released the key's lease")
			held, _ := slots(t, c, ns, "doc", 2)
			assert.Equal(t, []bool{true, true}, held, "the readers' permits only")
			require.NoError(t, r1.Release(ctx))
			require.NoError(t, r2.Release(ctx))

			w, err := sh.Write(ctx)
			require.NoError(t, err)
			assert.Equal(t, -1, w.Index)
			assert.Equal(t, "doc", w.Key(), "a writer's mark is the key's")
			held, _ = slots(t, c, ns, "doc", 2)
			assert.Equal(t, []bool{true, true}, held, "a writer holds every permit")
			_, err = sh.Read(ctx)
			require.ErrorIs(t, err, lease.ErrNotAcquired, "no reader beside a writer")
			require.NoError(t, w.Release(ctx))
			held, _ = slots(t, c, ns, "doc", 2)
			assert.Equal(t, []bool{false, false}, held)
			assert.Zero(t, c.Exists(ctx, leasekeys.Of(ns, "doc").Lock).Val())
		})
	}
}

// TestReadersYieldToAWriter: readers that hold on are not renewed once a
// writer holds the key: each is lost (yielded) at its cancel point, and
// the writer starts only after every reader's context ended.
func TestReadersYieldToAWriter(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	lk := newLocker(t, c, lease.Config{Namespace: ns, TTL: 600 * time.Millisecond})
	sh := newShared(t, lk, "doc", permits.Config{Limit: 3, Wait: 10 * time.Second})
	var ended sync.Map // reader -> when its context ended
	var readers []*permits.Permit
	for range 2 {
		r, err := sh.Read(ctx)
		require.NoError(t, err)
		readers = append(readers, r)
		context.AfterFunc(r.Context(), func() { ended.Store(r, time.Now()) })
	}
	// The readers never release by themselves: only the yield ends them.
	start := time.Now()
	w, err := sh.Write(ctx)
	require.NoError(t, err)
	in := time.Now()
	for _, r := range readers {
		var lost *lease.LostError
		require.ErrorAs(t, r.Err(), &lost)
		assert.Equal(t, lease.LossYielded, lost.Reason)
		at, ok := ended.Load(r)
		require.True(t, ok, "the reader's context ended")
		assert.True(t, at.(time.Time).Before(in), "a reader's context ends before the writer starts")
	}
	// Bound: a check period (TTL/3) + a reader's validity (TTL) + one
	// refresh (BackoffMax 500ms) + round trips.
	assert.Less(t, in.Sub(start), 3*time.Second)
	require.NoError(t, w.Release(ctx))
	for _, r := range readers {
		_ = r.Release(ctx)
	}
}

// TestWriterNotStarved: a stream of readers, each arriving while others
// read, does not keep a waiting writer out, and none of them reads while
// the writer writes.
func TestWriterNotStarved(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	lk := newLocker(t, c, lease.Config{Namespace: ns, TTL: 600 * time.Millisecond})
	sh := newShared(t, lk, "doc", permits.Config{Limit: 2, Wait: 10 * time.Second})
	var writing, overlaps, reads atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := sh.Read(ctx)
				if err != nil {
					continue
				}
				reads.Add(1)
				if writing.Load() != 0 {
					overlaps.Add(1)
				}
				select {
				case <-time.After(100 * time.Millisecond):
				case <-r.Context().Done():
				}
				_ = r.Release(ctx)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	for range 3 {
		w, err := sh.Write(ctx)
		require.NoError(t, err, "the writer gets in despite the readers")
		writing.Store(1)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, w.Err())
		writing.Store(0)
		require.NoError(t, w.Release(ctx))
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	assert.Positive(t, reads.Load(), "readers read between the writers")
	assert.Zero(t, overlaps.Load(), "no reader got a permit while a writer held the key")
}

// TestWritersAreFenced: writers' tokens strictly increase and are scoped
// to the key, so a deposed writer's write is rejected once the next
// writer wrote; a lost permit loses the writer's own lease.
func TestWritersAreFenced(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	store := fence.NewRedisStore(c, "docs", fence.RedisConfig{LockNamespace: ns})
	lk := newLocker(t, c, lease.Config{Namespace: ns, TTL: 300 * time.Millisecond})
	sh := newShared(t, lk, "doc", permits.Config{Limit: 2, Wait: 5 * time.Second})
	w1, err := sh.Write(ctx)
	require.NoError(t, err)
	require.NoError(t, store.Write(ctx, w1.Key(), w1.Token(), []byte("w1")))

	// One of w1's permits lost (its lock gone from Redis): w1 is lost.
	require.EqualValues(t, 1, c.Del(ctx, leasekeys.OfSlot(ns, "doc", 1).Lock).Val())
	<-w1.Context().Done()
	var lost *lease.LostError
	require.ErrorAs(t, w1.Err(), &lost, "the writer's own lease is lost with its permit")
	err = w1.Commit(ctx, func(context.Context, fence.Token) error { return errors.New("must not run") })
	require.ErrorIs(t, err, lease.ErrLost, "Commit refuses")

	// The key's lease expires by itself (w1 does not release): w2 waits.
	w2, err := sh.Write(ctx)
	require.NoError(t, err)
	assert.Greater(t, w2.Fence(), w1.Fence())
	require.NoError(t, store.Write(ctx, w2.Key(), w2.Token(), []byte("w2")))
	var stale *fence.StaleError
	require.ErrorAs(t, store.Write(ctx, w1.Key(), w1.Token(), []byte("late")), &stale, "the deposed writer is rejected")
	v, _, err := store.Read(ctx, "doc")
	require.NoError(t, err)
	assert.Equal(t, "w2", string(v))
	require.NoError(t, w2.Release(ctx))
	_ = w1.Release(ctx)
}

// TestWriterWaitEndsCleanly: a writer whose wait ends before the readers
// leave gets nothing and keeps nothing, and the readers read on.
func TestWriterWaitEndsCleanly(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	lk := newLocker(t, c, lease.Config{Namespace: ns, TTL: 10 * time.Second})
	readers := newShared(t, lk, "doc", permits.Config{Limit: 2})
	r, err := readers.Read(ctx)
	require.NoError(t, err)
	writer := newShared(t, lk, "doc", permits.Config{Limit: 2, Wait: 200 * time.Millisecond})
	_, err = writer.Write(ctx)
	var na *lease.NotAcquiredError
	require.ErrorAs(t, err, &na, "the wait's bound passed")
	assert.Equal(t, "doc", na.Key)
	assert.Zero(t, c.Exists(ctx, leasekeys.Of(ns, "doc").Lock).Val(), "the key's lease is released")
	eventuallySlots(t, c, ns, "doc", 2, 1, 0)
	require.NoError(t, r.Err(), "the reader did not yield: no writer holds the key")
	r2, err := readers.Read(ctx)
	require.NoError(t, err, "the permit the writer got is free again")
	require.NoError(t, r2.Release(ctx))
	require.NoError(t, r.Release(ctx))
}

// TestSharedLimitIsTheKeys: a caller whose limit is not the one recorded
// for the key is refused, reader and writer: a writer covering fewer
// permits than a reader uses would write beside it.
func TestSharedLimitIsTheKeys(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	lk := newLocker(t, c, lease.Config{Namespace: ns})
	three := newShared(t, lk, "doc", permits.Config{Limit: 3})
	r, err := three.Read(ctx)
	require.NoError(t, err)
	two := newShared(t, lk, "doc", permits.Config{Limit: 2})
	_, err = two.Write(ctx)
	require.ErrorContains(t, err, "has 3 readers' permits in Redis, and this caller 2")
	_, err = two.Read(ctx)
	require.Error(t, err)
	assert.Equal(t, "3", c.Get(ctx, leasekeys.Readers(ns, "doc")).Val())
	require.NoError(t, r.Release(ctx))
	w, err := three.Write(ctx)
	require.NoError(t, err, "the key's own limit is agreed")
	require.NoError(t, w.Release(ctx))
}

// TestWriterLostWhileWaiting: a writer whose permit is lost while it
// waits for another never works: once the reader ahead of it leaves,
// Write fails with the loss, and the writer holds nothing. (Before,
// Write returned a writer whose lost permit a reader could hold.)
func TestWriterLostWhileWaiting(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	h := telemetrytest.New(t)
	// The reader's long TTL keeps it (yielding) until it releases; the
	// writer's short one finds its permit gone within a renewal.
	readers := newShared(t, newLocker(t, c, lease.Config{Namespace: ns, TTL: 20 * time.Second}), "doc", permits.Config{Limit: 2})
	lk := newLocker(t, c, lease.Config{Namespace: ns, TTL: 300 * time.Millisecond, Telemetry: h.Tel})
	sh := newShared(t, lk, "doc", permits.Config{Limit: 2, Wait: 10 * time.Second})
	r, err := readers.Read(ctx)
	require.NoError(t, err)
	type written struct {
		p   *permits.Permit
		err error
	}
	done := make(chan written, 1)
	go func() {
		p, err := sh.Write(ctx)
		done <- written{p, err}
	}()
	require.Eventually(t, func() bool { // the free permit taken, the reader's waited for
		held, queued := slots(t, c, ns, "doc", 2)
		return count(held) == 2 && queued[r.Index] == 1
	}, 10*time.Second, 2*time.Millisecond)

	// The writer's permit disappears from Redis; its renewal finds it gone.
	require.EqualValues(t, 1, c.Del(ctx, leasekeys.OfSlot(ns, "doc", 1-r.Index).Lock).Val())
	h.EventuallySum(t, obs.LeaseLosses, telemetrytest.Attrs(obs.AttrLockName, "doc", obs.AttrReason, string(lease.LossRenewalRejected)), 1)
	_ = r.Release(ctx) // yielded or not, the reader leaves

	var w written
	select {
	case w = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer's Write did not return")
	}
	var lost *lease.LostError
	require.ErrorAs(t, w.err, &lost, "the writer lost a permit while it waited")
	assert.Equal(t, lease.LossRenewalRejected, lost.Reason)
	assert.Nil(t, w.p, "no writer is returned")
	eventuallySlots(t, c, ns, "doc", 2, 0, 0)
	assert.Zero(t, c.Exists(ctx, leasekeys.Of(ns, "doc").Lock).Val(), "the key's lease is released")
}

// TestARefusedWriterNamesTheHoldersReplica: a writer refused by another
// writer, or by a reader, names that holder's replica
// (lease.Config.Replica), waiting or not; a semaphore's refusal, whose
// permits may have as many holders, names none.
func TestARefusedWriterNamesTheHoldersReplica(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	a := newLocker(t, c, lease.Config{Namespace: ns, TTL: 10 * time.Second, Replica: "pod-a"})
	b := newLocker(t, c, lease.Config{Namespace: ns, TTL: 10 * time.Second, Replica: "pod-b"})
	refusedBy := func(sh *permits.Shared) string {
		t.Helper()
		_, err := sh.Write(ctx)
		var na *lease.NotAcquiredError
		require.ErrorAs(t, err, &na)
		assert.Equal(t, "doc", na.Key)
		return na.HolderReplica
	}
	fast := newShared(t, b, "doc", permits.Config{Limit: 2})
	waiting := newShared(t, b, "doc", permits.Config{Limit: 2, Wait: 100 * time.Millisecond})

	w, err := newShared(t, a, "doc", permits.Config{Limit: 2}).Write(ctx)
	require.NoError(t, err)
	assert.Equal(t, "pod-a", refusedBy(fast), "another writer")
	assert.Equal(t, "pod-a", refusedBy(waiting), "another writer, after a wait")
	require.NoError(t, w.Release(ctx))

	r, err := newShared(t, a, "doc", permits.Config{Limit: 2}).Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "pod-a", refusedBy(fast), "a reader")
	assert.Equal(t, "pod-a", refusedBy(waiting), "a reader, after a wait")
	require.NoError(t, r.Release(ctx))

	one, err := newSemaphore(t, a, "jobs", permits.Config{Limit: 1}).Acquire(ctx)
	require.NoError(t, err)
	_, err = newSemaphore(t, b, "jobs", permits.Config{Limit: 1}).Acquire(ctx)
	var na *lease.NotAcquiredError
	require.ErrorAs(t, err, &na)
	assert.Empty(t, na.HolderReplica, "a semaphore names no holder")
	require.NoError(t, one.Release(ctx))
}

package lease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestAPollerStaysBehindTheQueue: a waiter with ReplicationAcks does not
// queue (a grant another client's script wrote cannot be acknowledged by
// its own WAIT) but polls, and its poll never takes a key a queued waiter
// is owed. The holder's key expires unreleased while a queued waiter, whose
// refreshes are 3 s apart, waits; the poller, polling every 20 ms, is the
// first to find the key free, and its acquire hands the key to the queued
// waiter instead of taking it. The poller holds the key only after the
// queued waiter released it.
func TestAPollerStaysBehindTheQueue(t *testing.T) {
	ctx := testCtx(t)
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	require.NoError(t, replica.ReplicaOf(primary))
	c := primary.Client(t)

	holders := newLocker(t, c, Config{TTL: 300 * time.Millisecond})
	ns := holders.set.Namespace
	held, err := holders.Acquire(ctx, "k")
	require.NoError(t, err)
	queue := keysOf(ns, "k").Queue

	queued := newLocker(t, c, Config{Namespace: ns, Wait: 10 * time.Second, BackoffMax: 3 * time.Second})
	first := make(chan *Lease, 1)
	go func() {
		l, err := queued.Acquire(ctx, "k")
		assert.NoError(t, err)
		first <- l
	}()
	require.Eventually(t, func() bool { return c.LLen(ctx, queue).Val() == 1 }, 5*time.Second, time.Millisecond)

	poller := newLocker(t, c, Config{Namespace: ns, Wait: 10 * time.Second, BackoffMin: 20 * time.Millisecond,
		BackoffMax: 20 * time.Millisecond, ReplicationAcks: 1, ReplicationTimeout: time.Second})
	second := make(chan *Lease, 1)
	go func() {
		l, err := poller.Acquire(ctx, "k")
		assert.NoError(t, err)
		second <- l
	}()
	require.NoError(t, holders.Close()) // no release: the key expires by its TTL (300 ms)
	closed := time.Now()

	l := <-first
	require.NotNil(t, l)
	assert.Less(t, time.Since(closed), 1300*time.Millisecond, "granted on the poller's acquire, not at the queued waiter's 3 s refresh")
	assert.Greater(t, l.Fence(), held.Fence())
	select {
	case p := <-second:
		t.Fatalf("the poller took the key (fence %d) while the queued waiter held it", p.Fence())
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, l.Release(ctx))
	p := <-second
	require.NotNil(t, p)
	assert.Greater(t, p.Fence(), l.Fence(), "the poller came after the queued waiter")
}

package lease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestCloseLeavesTheQueue: a Locker closed while one of its Acquires waits
// in a key's queue returns from Close only after that waiter left the
// queue, so that the holder's release hands the key to nobody who is gone.
// The client is closed right after, as a program's deferred calls do: a
// leave still to be sent then would fail, and the entry stay queued for
// its lifetime (here 10 s), granted the key on the release.
func TestCloseLeavesTheQueue(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	holders := newLocker(t, srv.Client(t), Config{TTL: 10 * time.Second})
	h, err := holders.Acquire(ctx, "k")
	require.NoError(t, err)

	c := srv.Client(t)
	waiting := NewLocker(c, Config{Namespace: holders.set.Namespace, TTL: 10 * time.Second, Wait: 10 * time.Second})
	got := make(chan error, 1)
	go func() {
		_, err := waiting.Acquire(ctx, "k")
		got <- err
	}()
	waitForWaiters(t, waiting, 1)
	keys := keysOf(holders.set.Namespace, "k")
	other := srv.Client(t)
	require.Equal(t, int64(1), other.HLen(ctx, keys.Entries).Val(), "the waiter is queued")

	require.NoError(t, waiting.Close())
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-got, ErrClosed)
	assert.Zero(t, other.HLen(ctx, keys.Entries).Val(), "the closed Locker's waiter left the queue")
	require.NoError(t, h.Release(ctx))
	assert.Zero(t, other.Exists(ctx, keys.Lock).Val(), "the release handed the key to nobody")
}

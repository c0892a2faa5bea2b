package lease

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// lostCause waits for l's loss and returns its *LostError.
func lostCause(t *testing.T, l *Lease) *LostError {
	t.Helper()
	select {
	case <-l.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost")
	}
	var lost *LostError
	require.ErrorAs(t, context.Cause(l.Context()), &lost)
	return lost
}

// TestKeyHeldUntil: a lease lost to a stalled Redis says until when its
// key is still its own: after the loss (the safety margin the work has to
// stop in), and no later than its acquire's send plus the TTL, before
// which Redis cannot have expired the key. A lease whose key Redis said was
// gone says nothing (zero).
func TestKeyHeldUntil(t *testing.T) {
	ctx := testCtx(t)
	t.Run("stalled", func(t *testing.T) {
		srv := redistest.Start(t)
		lk := newLocker(t, srv.Client(t), Config{TTL: time.Second, SafetyMargin: 200 * time.Millisecond})
		sent := time.Now()
		l, err := lk.Acquire(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, srv.Pause())
		t.Cleanup(func() { _ = srv.Resume() })
		lost := lostCause(t, l)
		lostAt := time.Now()
		require.False(t, lost.KeyHeldUntil.IsZero(), "a stall leaves the key in Redis for a while")
		assert.True(t, lost.KeyHeldUntil.After(lostAt), "the margin is still ahead at the loss")
		assert.False(t, lost.KeyHeldUntil.After(sent.Add(time.Second)), "never past the acquire's send + TTL")
		assert.InDelta(t, 200*time.Millisecond, lost.KeyHeldUntil.Sub(lostAt), float64(150*time.Millisecond), "about the safety margin")
	})
	t.Run("force released", func(t *testing.T) {
		srv := redistest.Start(t)
		lk := newLocker(t, srv.Client(t), Config{TTL: time.Second})
		l, err := lk.Acquire(ctx, "k")
		require.NoError(t, err)
		info, err := lk.Inspect(ctx, "k")
		require.NoError(t, err)
		_, err = lk.ForceRelease(ctx, "k", info.Holder)
		require.NoError(t, err)
		lost := lostCause(t, l)
		assert.Equal(t, LossForceReleased, lost.Reason)
		assert.True(t, lost.KeyHeldUntil.IsZero(), "Redis said the key is gone: nothing to count on")
	})
}

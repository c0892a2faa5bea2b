package lease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// A contended Acquire tells a holder of this process (the same Locker, or
// one sharing its scheduler) from one elsewhere, and while waiting too.
func TestNotAcquiredHeldHere(t *testing.T) {
	c := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{TTL: 5 * time.Second, Namespace: "heldhere"})
	other := newLocker(t, c, Config{TTL: 5 * time.Second, Namespace: "heldhere"})
	held := func(lk *Locker, key string) bool {
		t.Helper()
		_, err := lk.Acquire(ctx, key)
		var busy *NotAcquiredError
		require.ErrorAs(t, err, &busy)
		return busy.HeldHere
	}
	l, err := lk.Acquire(ctx, "here")
	require.NoError(t, err)
	assert.True(t, held(lk, "here"))
	assert.True(t, held(with(t, lk, Config{Wait: 20 * time.Millisecond}), "here"), "a waiter of a derived Locker")
	assert.False(t, held(other, "here"), "another Locker is another replica")
	_, err = lk.Acquire(ctx, "here")
	assert.Contains(t, err.Error(), "another lease of this process")
	require.NoError(t, l.Release(ctx))

	o, err := other.Acquire(ctx, "there")
	require.NoError(t, err)
	defer o.Release(ctx)
	assert.False(t, held(lk, "there"))
	_, err = lk.Acquire(ctx, "there")
	assert.Contains(t, err.Error(), "another owner")
}

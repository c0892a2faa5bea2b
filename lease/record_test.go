package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fence record lockwatch cannot have written (hex, exponents, inf,
// leading zeros, a value at or above 2^53) is refused with an error, never
// read as a number: Lua's tonumber accepts all of these, and a record at
// 2^53 makes last + 1 round back to itself, so fences would repeat. At the
// top of the range the acquire is refused too, again never a repeat.
func TestFenceRecordsAreReadStrictly(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := testCtx(t)
			c := b.client(t)
			lk := newLocker(t, c, Config{})
			for _, rec := range []string{"0x10", "1e300", "inf", "nan", "9007199254740992", "90071992547409920", "00012", "12abc", " 12"} {
				_, fenceKey := redisKeys(lk.set.Namespace, rec)
				require.NoError(t, c.Set(ctx, fenceKey, rec, 0).Err())
				l, err := lk.Acquire(ctx, rec)
				if err == nil {
					t.Errorf("record %q: acquired with fence %d", rec, l.Fence())
					_ = l.Release(ctx)
					continue
				}
				require.NotErrorIs(t, err, ErrUnknown, "record %q: nothing was written, the result is known", rec)
				require.NotErrorIs(t, err, ErrNotAcquired, "record %q", rec)
				assert.Equal(t, rec, c.Get(ctx, fenceKey).Val(), "the record is left as it was")
			}

			_, fenceKey := redisKeys(lk.set.Namespace, "top")
			require.NoError(t, c.Set(ctx, fenceKey, "9007199254740990", 0).Err())
			l, err := lk.Acquire(ctx, "top")
			require.NoError(t, err)
			assert.EqualValues(t, 1<<53-1, l.Fence(), "the largest fence")
			require.NoError(t, l.Release(ctx))
			_, err = lk.Acquire(ctx, "top")
			require.Error(t, err, "no fence above 2^53 - 1, and no repeat")
			require.NotErrorIs(t, err, ErrUnknown)
			assert.Contains(t, err.Error(), "exhausted")
		})
	}
}

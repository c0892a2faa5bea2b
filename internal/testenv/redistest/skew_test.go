package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// A skewed server's TIME is off by the offset, and stays off across a
// restart; a relative TTL still runs for its real length.
func TestStartSkewedMovesTheWallClock(t *testing.T) {
	ctx := context.Background()
	s := redistest.StartSkewed(t, -30*time.Second)
	c := s.Client(t)
	for range 2 {
		got, err := c.Time(ctx).Result()
		require.NoError(t, err)
		assert.InDelta(t, -30*time.Second, time.Until(got), float64(2*time.Second), "TIME is 30 s behind")
		// Set and expired by the same moved clock, a relative TTL runs
		// for its real length.
		require.NoError(t, c.Set(ctx, "k", "v", 700*time.Millisecond).Err())
		time.Sleep(400 * time.Millisecond)
		assert.EqualValues(t, 1, c.Exists(ctx, "k").Val(), "not expired early")
		time.Sleep(500 * time.Millisecond)
		assert.EqualValues(t, 0, c.Exists(ctx, "k").Val(), "expired after 700ms of real time")
		require.NoError(t, s.Kill())
		require.NoError(t, s.Restart())
	}
	plain := redistest.Start(t).Client(t)
	got, err := plain.Time(ctx).Result()
	require.NoError(t, err)
	assert.InDelta(t, 0, time.Until(got), float64(2*time.Second), "other servers keep the machine's clock")
}

package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/redistest"
)

// A skewed server's TIME is off by the offset, and stays off across a
// restart; relative expiry still counts real time.
func TestStartSkewedMovesTheWallClock(t *testing.T) {
	ctx := context.Background()
	s := redistest.StartSkewed(t, -30*time.Second)
	c := s.Client(t)
	for range 2 {
		got, err := c.Time(ctx).Result()
		require.NoError(t, err)
		assert.InDelta(t, -30*time.Second, time.Until(got), float64(2*time.Second), "TIME is 30 s behind")
		require.NoError(t, c.Set(ctx, "k", "v", 5*time.Second).Err())
		ttl, err := c.PTTL(ctx, "k").Result()
		require.NoError(t, err)
		assert.InDelta(t, 5*time.Second, ttl, float64(time.Second))
		require.NoError(t, s.Kill())
		require.NoError(t, s.Restart())
	}
	plain := redistest.Start(t).Client(t)
	got, err := plain.Time(ctx).Result()
	require.NoError(t, err)
	assert.InDelta(t, 0, time.Until(got), float64(2*time.Second), "other servers keep the machine's clock")
}

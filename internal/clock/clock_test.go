package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestClockFollowsElapsedTime(t *testing.T) {
	start, wall := Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	elapsed, wallElapsed := Now()-start, time.Since(wall)
	assert.GreaterOrEqual(t, elapsed, 20*time.Millisecond)
	assert.InDelta(t, float64(wallElapsed), float64(elapsed), float64(5*time.Millisecond))
	at := Now() + time.Second
	assert.WithinDuration(t, time.Now().Add(time.Second), WallTime(at), 5*time.Millisecond)
}

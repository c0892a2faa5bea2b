package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestClockFollowsBootTime(t *testing.T) {
	for range 1000 {
		before := readBoot() - bootBase
		got := clockNow()
		after := readBoot() - bootBase
		assert.GreaterOrEqual(t, got, before-20*time.Microsecond)
		assert.LessOrEqual(t, got, after+20*time.Microsecond)
	}
}

// A suspend moves the wall clock against the monotonic one; the offset to
// CLOCK_BOOTTIME must then be read again before a reading is used. Here the
// sample is made stale as a suspend would leave it: an offset 5 s too small
// and a skew 5 s behind.
func TestClockResamplesWhenWallAndMonotonicDiverge(t *testing.T) {
	s := sampleBoot()
	for _, shift := range []time.Duration{5 * time.Second, -5 * time.Second, 2 * time.Millisecond} {
		bootSample.Store(&boot{offset: s.offset - 5*time.Second, skew: s.skew - shift})
		before := readBoot() - bootBase
		// A stale sample would be 5 s behind; the resample itself reads
		// two clocks, tens of microseconds apart under the race detector.
		assert.GreaterOrEqual(t, clockNow(), before-200*time.Microsecond, "skew moved by %v", shift)
	}
	// Within a millisecond the sample is trusted: no system call.
	stale := &boot{offset: s.offset - 5*time.Second, skew: s.skew}
	bootSample.Store(stale)
	assert.Less(t, clockNow(), readBoot()-bootBase-4*time.Second, "the sample is used as is")
	sampleBoot()
}

package clock

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// clockNow reads CLOCK_BOOTTIME without a system call on the hot path.
//
// CLOCK_BOOTTIME is CLOCK_MONOTONIC plus the time spent suspended. Go reads
// the monotonic and the wall clock from the vDSO (tens of nanoseconds); a
// CLOCK_BOOTTIME read through x/sys is a system call (about 0.5 µs, and a
// profile of a locked request showed a dozen of them taking a fifth of its
// CPU). So clockNow adds a sampled offset, CLOCK_BOOTTIME − monotonic, to the
// monotonic reading. The offset changes only when the machine suspends, and a
// suspend moves the wall clock against the monotonic one (the kernel sets the
// wall clock on resume): whenever wall − monotonic has moved by more than a
// millisecond since the sample (a suspend, or a wall-clock step or slew,
// which resamples harmlessly), the offset is read again with a system call
// before the reading is used.
func clockNow() time.Duration {
	if !hasBootClock {
		return time.Since(monoBase)
	}
	mono, skew := readings()
	s := bootSample.Load()
	if s == nil {
		s = sampleBoot()
	}
	if d := skew - s.skew; d > time.Millisecond || d < -time.Millisecond {
		s = sampleBoot()
	}
	return mono + s.offset
}

// boot is one sample: CLOCK_BOOTTIME − monotonic, and wall − monotonic, at
// the same moment (both since monoBase).
type boot struct{ offset, skew time.Duration }

var (
	monoBase     = time.Now()
	hasBootClock = func() bool {
		var ts unix.Timespec
		return unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil
	}()
	bootBase   = readBoot()
	bootSample atomic.Pointer[boot] // nil until the first reading
)

func readBoot() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano())
}

func sampleBoot() *boot {
	if !hasBootClock {
		return &boot{}
	}
	b := readBoot() - bootBase
	mono, skew := readings()
	s := &boot{offset: b - mono, skew: skew}
	// CLOCK_BOOTTIME − monotonic never decreases; a smaller measurement is
	// the time between the two reads, and taking it would step the clock
	// back.
	if prev := bootSample.Load(); prev != nil {
		s.offset = max(s.offset, prev.offset)
	}
	bootSample.Store(s)
	return s
}

// readings returns the monotonic time since monoBase and wall − monotonic,
// from one time.Now (both clocks from the vDSO).
func readings() (mono, skew time.Duration) {
	t := time.Now()
	mono = t.Sub(monoBase)
	return mono, time.Duration(t.UnixNano()-monoBase.UnixNano()) - mono
}

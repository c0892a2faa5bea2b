// Package clock is the clock every lease timing is measured on.
//
// It only moves forward at a steady rate, never with the wall clock: a
// wall-clock step (NTP, an operator) must not stretch or shrink a lease. On
// Linux it is CLOCK_BOOTTIME, because Go's monotonic clock (CLOCK_MONOTONIC)
// stops while the system is suspended: a host that sleeps through a TTL must
// find its lease past its cancel point on waking, not valid for most of
// another TTL. Elsewhere it is Go's monotonic clock. A stop the guest kernel
// is not told about (a frozen VM) stops both clocks; only the fence protects
// against that, as against any pause.
//
// An instant is the time since the package's epoch on that clock, plus the
// jumps that tests and the chaos harness make it take (internal/suspend,
// always zero in production).
package clock

import (
	"time"

	"github.com/lockwatch/lockwatch/internal/suspend"
)

var epoch = clockNow()

// Now returns the current instant.
func Now() time.Duration { return clockNow() - epoch + suspend.Offset() }

// WallTime turns an instant into a time.Time for a context deadline.
func WallTime(at time.Duration) time.Time { return time.Now().Add(at - Now()) }

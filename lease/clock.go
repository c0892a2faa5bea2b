package lease

import (
	"time"

	"github.com/lockwatch/lockwatch/internal/suspend"
)

// Every lease timing is measured on a clock that only moves forward at a
// steady rate, never on the wall clock: a wall-clock step (NTP, an operator)
// must not stretch or shrink a lease. On Linux that clock is CLOCK_BOOTTIME,
// because Go's monotonic clock (CLOCK_MONOTONIC) stops while the system is
// suspended: a host that sleeps through a TTL must find its lease past its
// cancel point on waking, not valid for most of another TTL. Elsewhere it is
// Go's monotonic clock. A stop the guest kernel is not told about (a frozen
// VM) stops both clocks; only the fence protects against that, as against
// any pause.
//
// An instant is the time since the package's epoch on that clock, plus
// the jumps that tests and the chaos harness make it take (internal/suspend,
// always zero in production).
var epoch = clockNow()

func now() time.Duration { return clockNow() - epoch + suspend.Offset() }

// wallTime turns an instant into a time.Time for a context deadline.
func wallTime(at time.Duration) time.Time { return time.Now().Add(at - now()) }

package lease

import "time"

// Every lease timing is measured on Go's monotonic clock, never the wall
// clock: a wall-clock step (NTP, a VM resume) must not stretch a lease. An
// instant is the monotonic time since the package's epoch.
var epoch = time.Now()

func now() time.Duration { return time.Since(epoch) }

// wallTime turns an instant into a time.Time that keeps the monotonic
// reading, for context deadlines.
func wallTime(at time.Duration) time.Time { return epoch.Add(at) }

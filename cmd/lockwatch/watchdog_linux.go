package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// selfExe is lockwatch's own binary, for the watchdog: /proc/self/exe
// runs even if the file was replaced or removed since lockwatch started
// (an upgrade while a job runs).
func selfExe() (string, error) { return "/proc/self/exe", nil }

// sharedNow reads the clock lockwatch and its watchdog share for the
// cancel point: CLOCK_BOOTTIME, the lease's own (internal/clock), which
// moves on while the machine is suspended.
func sharedNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano())
}

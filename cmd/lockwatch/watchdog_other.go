//go:build !linux

package main

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// selfExe is lockwatch's own binary, for the watchdog.
func selfExe() (string, error) { return os.Executable() }

// sharedNow reads the clock lockwatch and its watchdog share for the
// cancel point: the system's monotonic clock.
func sharedNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

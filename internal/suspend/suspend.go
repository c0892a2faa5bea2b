// Package suspend lets tests and the chaos harness move the clock that
// leases run on the way a system suspend moves it.
//
// A suspended Linux host stops CLOCK_MONOTONIC, which Go's timers run on,
// but not CLOCK_BOOTTIME, which the lease package measures validity with:
// on resume, every lease deadline has passed by the boot clock while every
// Go timer still waits for the time it was set to. Emulate adds d to the
// lease clock (package clock) without moving Go's, which is what a process
// sees after a suspend of d. Nothing outside tests and the harness calls it,
// so in production the offset stays zero (one atomic load per reading).
package suspend

import (
	"sync/atomic"
	"time"
)

var offset atomic.Int64

// Emulate makes the lease clock jump forward by d, as a suspend of d does.
// It panics on a negative d: the clock never goes back.
func Emulate(d time.Duration) {
	if d < 0 {
		panic("suspend: negative duration")
	}
	offset.Add(int64(d))
}

// Offset is the sum of every Emulate so far.
func Offset() time.Duration { return time.Duration(offset.Load()) }

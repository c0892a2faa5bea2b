package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

// errPoll is how often a holder asks its lease whether it is past its
// cancel point. It only bounds how late the first non-nil Err is seen, so
// it shortens a measured delay, never lengthens it.
const errPoll = 2 * time.Millisecond

// watchErr polls l.Err until l's context is done, and sends on the result
// when Err first reported a loss (0 if it never did before the context
// ended, or only reported the release).
//
// Err reads the lease clock, which is what a suspend moves: past the cancel
// point it reports the loss at once, while the context is cancelled by the
// Locker's scheduler, on Go's timers, which a suspend leaves behind. A
// worker may check either; they must agree within the cancel window, or a
// worker that watches only its context goes on with a lease its own Err
// calls lost ("late_cancel").
func watchErr(l *lease.Lease) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		t := time.NewTicker(errPoll)
		defer t.Stop()
		for {
			select {
			case <-l.Context().Done():
				out <- 0
				return
			case <-t.C:
			}
			if err := l.Err(); err != nil && !errors.Is(err, lease.ErrReleased) {
				at := now()
				<-l.Context().Done() // the holder releases it in the end
				out <- at
				return
			}
		}
	}()
	return out
}

// lateCancels lists the leases whose context was still live more than
// window after their Err first reported the loss, or after their holder
// process was last resumed when it was stopped in between (holder-stop,
// suspend): a stopped process can cancel nothing, but once resumed it has
// the window like any other. resumedAt returns the end of the last stop of
// process proc overlapping from..to, 0 if none.
func lateCancels(leases []leaseRec, window time.Duration, resumedAt func(proc int, from, to int64) int64) (late []leaseRec, bad []string) {
	for _, r := range leases {
		if r.ErrAt == 0 {
			continue
		}
		from := max(r.ErrAt, resumedAt(r.Proc, r.ErrAt, r.Done))
		if d := time.Duration(r.Done - from); d > window {
			late = append(late, r)
			bad = append(bad, fmt.Sprintf("late_cancel: %s's lease on %s (fence %d) was lost by its Err %v before its context was done (window %v)",
				r.Holder, r.Key, r.Fence, d.Round(time.Millisecond), window))
		}
	}
	return late, bad
}

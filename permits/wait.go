package permits

import (
	"context"
	"errors"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

// slotResult is one permit's waiting acquire.
type slotResult struct {
	index int
	l     *lease.Lease
	err   error
}

// wait queues on every permit at once, each a waiting acquire in that
// permit's queue, and takes the first granted. The others' waits end then,
// in the background: each leaves its queue, and a permit granted to this
// caller meanwhile is released at once, which hands it to that permit's
// next waiter. So a caller keeps one permit, and no permit stays free
// while another caller waits for it. The wait ends at Config.Wait or with
// ctx; the permit's context derives from ctx alone.
func (s *Semaphore) wait(ctx context.Context, ev *obs.PermitAcquire) (*Permit, error) {
	left := s.cfg.Wait - time.Since(ev.Start)
	if left <= 0 {
		return nil, nil // the free permits' attempts took the whole wait
	}
	wctx, stop := context.WithTimeout(ctx, left)
	results := make(chan slotResult, s.cfg.Limit)
	for i := range s.cfg.Limit {
		go func() {
			l, err := s.take(ctx, wctx, i, true)
			results <- slotResult{index: i, l: l, err: err}
		}()
	}
	s.rec.PermitWaitStarted(ctx, ev)
	var first error
	for n := 1; n <= s.cfg.Limit; n++ {
		r := <-results
		if r.l != nil {
			stop()
			go drain(context.WithoutCancel(ctx), results, s.cfg.Limit-n)
			return &Permit{Lease: r.l, Index: r.index, sem: s}, nil
		}
		first = worse(first, r.err, ev)
	}
	stop()
	if ev.Unknown != nil {
		return nil, ev.Unknown
	}
	if context.Cause(ctx) == nil && errors.Is(first, lease.ErrNotAcquired) {
		first = &lease.NotAcquiredError{Key: s.key} // the wait's bound passed
	}
	return nil, first
}

// drain collects the n waits left after the first grant, releasing every
// permit one of them was granted.
func drain(ctx context.Context, results <-chan slotResult, n int) {
	for range n {
		if r := <-results; r.l != nil {
			r.l.ReleaseAsync(ctx)
		}
	}
}

// worse returns whichever of the errors says more about a wait that took
// nothing: an unknown attempt (kept in ev too), then a failure that is not
// contention (a closed Locker, Redis unreachable), then contention with
// the caller's cause.
func worse(have, err error, ev *obs.PermitAcquire) error {
	switch {
	case errors.Is(err, lease.ErrUnknown):
		ev.Unknown = err
		return err
	case have == nil:
		return err
	case errors.Is(have, lease.ErrUnknown):
		return have
	case errors.Is(have, lease.ErrNotAcquired) && !errors.Is(err, lease.ErrNotAcquired):
		return err
	}
	return have
}

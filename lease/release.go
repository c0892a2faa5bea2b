package lease

import (
	"context"
	"fmt"
)

// Release ends the lease: renewal stops, its context is cancelled (cause
// ErrReleased, unless it was lost first), and the key is deleted if, and only
// if, it still holds this lease's owner token, so a Release can never delete
// another holder's lock. It runs on a context detached from ctx (which may be
// cancelled already) and bounded by the release timeout.
//
// Release marks the end of the protected work: for a lease lost earlier, the
// time since the loss is the work's cancellation latency (ReleaseEvent). A
// lost lease is released too, in case its key is still there.
//
// It returns nil when the key was deleted, ErrNotHeld when the key had
// already expired or changed hands, and the Redis error when the outcome is
// unknown (the key then expires by its TTL). Only the first call does
// anything; later calls return nil.
func (l *Lease) Release(ctx context.Context) error {
	if !l.releasing.CompareAndSwap(false, true) {
		return nil
	}
	lostAt, wasLost, newly := l.locker.sched.remove(l)
	if newly {
		reportLoss(l)
	}
	at := now()
	l.cancel(ErrReleased)

	rctx, cancel := releaseCtx(ctx, l.set)
	defer cancel()
	n, err := releaseScript.Run(rctx, l.locker.client, l.keys[:1], l.owner).Int64()

	ev := ReleaseEvent{Name: l.set.name, Key: l.key, Fence: l.fence, Held: at - l.sentAt, Lost: wasLost}
	if wasLost {
		ev.SinceLoss = at - lostAt
	}
	switch {
	case err != nil:
		ev.Result, ev.Err = ReleaseUnknown, fmt.Errorf("lease: release %q: %w", shortKey(l.key), err)
	case n == 1:
		ev.Result = Released
	default:
		ev.Result, ev.Err = ReleaseNotHeld, ErrNotHeld
	}
	l.set.observeRelease(l.ctx, ev)
	return ev.Err
}

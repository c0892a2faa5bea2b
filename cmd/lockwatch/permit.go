package main

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// envPermit is the variable that tells a program run with --permits which
// permit it holds, 0 to N-1: a program that keeps work of its own per
// permit (a scratch directory, a connection slot) names it by this.
const envPermit = "LOCKWATCH_PERMIT"

// holding is what lockwatch run holds while its program runs: the exclusive
// lease on --key, or with --permits one of the key's permits. A permit is
// a lease (package permits), so the supervisor holds either the same way:
// renewed, lost before its key can expire, fenced.
type holding struct {
	l      *lease.Lease    // the lease, or the permit's
	permit *permits.Permit // nil for the lease on --key
}

// key is the key the held lease's token is scoped to: --key, or the
// permit's own key, "K#<index>", under which a fenced store keeps the
// permit's mark.
func (h *holding) key() string { return h.l.Key() }

// env is the program's environment under h: leaseEnv with the held key,
// and for a permit its index.
func (h *holding) env() []string {
	env := leaseEnv(h.key(), h.l.Fence(), h.l.Token())
	if h.permit != nil {
		env = append(env, envPermit+"="+strconv.Itoa(h.permit.Index))
	}
	return env
}

// release ends the lease, or the permit through its semaphore, which
// takes it off the permits held.
func (h *holding) release(ctx context.Context) error {
	if h.permit != nil {
		return h.permit.Release(ctx)
	}
	return h.l.Release(ctx)
}

// leaseWait is the wait of run's Locker: --wait for the lease on the key;
// none for the permits, whose semaphore waits (permits.Config.Wait) on
// every permit at once, each attempt of its own without one.
func (f *runFlags) leaseWait() time.Duration {
	if f.permits > 0 {
		return 0
	}
	return f.wait
}

// take takes what run holds: the lease on the key, or one of its permits.
func (f *runFlags) take(ctx context.Context, lk *lease.Locker, stderr io.Writer) (*holding, error) {
	if f.permits == 0 {
		l, err := lk.Acquire(ctx, f.key)
		if l == nil {
			return nil, err
		}
		return &holding{l: l}, err
	}
	sem, err := permits.New(lk, f.key, permits.Config{Limit: f.permits, Name: f.name, Wait: f.wait})
	if err != nil {
		return nil, usageErr("run", "%v", err)
	}
	p, err := sem.Acquire(ctx)
	if p == nil {
		return nil, err
	}
	return &holding{l: p.Lease, permit: p}, err
}

// checkPermits validates --permits: unset is the exclusive lease, set it
// is 1 to permits.MaxLimit.
func (f *runFlags) checkPermits(set map[string]bool) error {
	if set["permits"] && (f.permits < 1 || f.permits > permits.MaxLimit) {
		return usageErr("run", "--permits %d: must be 1 to %d", f.permits, permits.MaxLimit)
	}
	return nil
}

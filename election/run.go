package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

// termState is a live term: its lease and what Leading reports.
type termState struct {
	l    *lease.Lease
	term Term
}

// Run campaigns for the key and, whenever this candidate wins, runs fn with
// the term and the term's context, until ctx ends:
//
//   - A candidate waits in the key's queue, first come, first served, as
//     long as ctx lives: a resigning leader hands the key to the oldest
//     waiter at once.
//   - fn's context is the term's lease's context: cancelled, with a
//     *lease.LostError cause, before the key can expire, and with ctx's
//     cause when ctx ends.
//   - fn is awaited before the term is resigned (its lease released, its
//     token barred), so the next term starts after fn returned, unless
//     the key expired first: a late completion (ErrLateCompletion).
//   - After a loss, the candidate campaigns again after Config.Pause.
//   - When fn returns while its term is live, Run resigns and returns
//     fn's error. When ctx ends, Run resigns any term and returns ctx's
//     cause. Either wraps ErrLateCompletion if that term ended late.
//
// Run returns other errors only when it cannot campaign: lease.ErrClosed,
// or a Config.Namespace that is not the Locker's.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context, t Term) error) error {
	if fn == nil {
		return invalidf("nil function")
	}
	if !e.running.CompareAndSwap(false, true) {
		return invalidf("Run called while another Run of the election runs")
	}
	defer e.running.Store(false)
	for {
		l, err := e.campaign(ctx)
		if err != nil {
			return err
		}
		if done, err := e.lead(ctx, l, fn); done {
			return err
		}
		if !sleep(ctx, e.cfg.Pause) {
			return context.Cause(ctx)
		}
	}
}

// campaign waits for the key until it is granted, ctx ends, or the Locker
// is closed.
func (e *Election) campaign(ctx context.Context) (*lease.Lease, error) {
	for {
		l, err := e.lk.Acquire(ctx, e.key)
		switch {
		case err == nil && ctx.Err() == nil:
			return l, nil
		case err == nil:
			_ = l.Release(ctx) // won as ctx ended: never led
			return nil, context.Cause(ctx)
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case errors.Is(err, lease.ErrClosed):
			return nil, err
		case errors.Is(err, lease.ErrNotAcquired):
			continue // the wait ran out: queue again
		}
		// Unknown or failed: the Locker cleans an unknown acquire up.
		if !sleep(ctx, e.cfg.Pause) {
			return nil, context.Cause(ctx)
		}
	}
}

// lead runs one term on l and resigns it. It returns true and Run's result
// when Run is over: fn returned while leading, or ctx ended.
func (e *Election) lead(ctx context.Context, l *lease.Lease, fn func(context.Context, Term) error) (bool, error) {
	if l.Token().Scope != e.scope {
		_ = l.Release(ctx)
		return true, e.namespaceError()
	}
	t := Term{Fence: l.Fence(), Token: l.Token(), Identity: e.cfg.Identity, Start: time.Now()}
	stopRecord := e.keepRecord(l.Context(), t, l.Remaining())
	e.setLeading(&termState{l: l, term: t})
	if e.cfg.OnStartedLeading != nil {
		e.cfg.OnStartedLeading(t)
	}
	fnErr := e.runFn(l, t, fn, stopRecord)
	lost := l.Err() // the loss, or nil: the term was live when fn returned
	released := l.Release(ctx)
	late := released != nil && (lost != nil || errors.Is(released, lease.ErrNotHeld))
	var reason, result error
	switch {
	case lost != nil:
		reason, result = lost, context.Cause(ctx)
	case ctx.Err() != nil:
		reason, result = context.Cause(ctx), context.Cause(ctx)
	default:
		reason, result = resigned(fnErr), fnErr
	}
	if late {
		reason, result = lateError(reason), lateError(result)
	}
	if e.cfg.OnStoppedLeading != nil {
		e.cfg.OnStoppedLeading(t, reason)
	}
	return lost == nil || ctx.Err() != nil, result
}

// runFn runs fn on the term's context. Leading reports the term until fn
// returns; a panic in fn resigns the term and goes on.
func (e *Election) runFn(l *lease.Lease, t Term, fn func(context.Context, Term) error, stopRecord func()) (err error) {
	panicking := true
	defer func() {
		stopRecord()
		e.setLeading(nil)
		if panicking {
			_ = l.Release(context.Background())
		}
	}()
	err = fn(l.Context(), t)
	panicking = false
	return err
}

func (e *Election) setLeading(ts *termState) {
	e.mu.Lock()
	e.leading = ts
	e.mu.Unlock()
}

func resigned(fnErr error) error {
	if fnErr == nil {
		return ErrResigned
	}
	return fmt.Errorf("%w: %w", ErrResigned, fnErr)
}

// lateError marks err as a late completion; a nil err (fn's success)
// becomes ErrLateCompletion itself.
func lateError(err error) error {
	if err == nil {
		return ErrLateCompletion
	}
	return fmt.Errorf("%w: %w", ErrLateCompletion, err)
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

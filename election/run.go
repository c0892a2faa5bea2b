package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

// termState is a live term: its lease and what Leading reports, and how
// its record's rewrites stop and its end is reported.
type termState struct {
	l          *lease.Lease
	term       Term
	stopRecord func()
	ended      func(lost error, late bool)
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
// Run returns other errors only when it cannot campaign: lease.ErrClosed.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context, t Term) error) error {
	if fn == nil {
		return invalidf("nil function")
	}
	if !e.running.CompareAndSwap(false, true) {
		return invalidf("Run called while another Run of the election runs")
	}
	defer e.running.Store(false)
	e.setLeading(nil)
	defer obs.Campaigns.Add(e.campaign)()
	e.rec.Campaigning(ctx, obs.Candidate{Election: e.cfg.Name, Identity: e.cfg.Identity})
	for {
		l, err := e.wait(ctx)
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

// wait waits for the key until it is granted, ctx ends, or the Locker is
// closed.
func (e *Election) wait(ctx context.Context) (*lease.Lease, error) {
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
	t := Term{Fence: l.Fence(), Token: l.Token(), Identity: e.cfg.Identity, Start: time.Now()}
	endBound := l.Remaining()/3 + minRewrite // the record's end mark's
	gap, stopRecord := e.keepRecord(l, t)
	obsCtx, span := e.rec.StartTerm(ctx, obs.TermStart{Election: e.cfg.Name, Identity: t.Identity, Fence: t.Fence, Leaderless: gap})
	ended := func(lost error, late bool) { e.endTerm(obsCtx, span, t, lost, late) }
	ts := &termState{l: l, term: t, stopRecord: stopRecord, ended: ended}
	e.setLeading(ts)
	if e.cfg.OnStartedLeading != nil {
		e.cfg.OnStartedLeading(t)
	}
	fnErr := e.runFn(trace.ContextWithSpan(l.Context(), span), ts, fn)
	returned := time.Now()
	lost := l.Err() // the loss, or nil: the term was live when fn returned
	released := l.Release(ctx)
	late := isLate(lost, released, returned)
	ended(lost, late)
	e.endRecord(ctx, t, endBound)
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

// runFn runs fn on ctx, the term's context. Leading reports the term until
// fn returns; a panic in fn resigns the term, ends it (ended) and goes on.
func (e *Election) runFn(ctx context.Context, ts *termState, fn func(context.Context, Term) error) (err error) {
	panicking := true
	defer func() {
		ts.stopRecord()
		e.setLeading(nil)
		if panicking {
			returned, lost := time.Now(), ts.l.Err()
			ts.ended(lost, isLate(lost, ts.l.Release(context.Background()), returned))
		}
	}()
	err = fn(ctx, ts.term)
	panicking = false
	return err
}

// isLate tells whether fn, which returned at returned, may have overlapped
// the next term (the package doc says why these cases): its release found
// the key gone, or could not tell and fn returned past the instant its
// lost term's key may have expired.
func isLate(lost, released error, returned time.Time) bool {
	switch {
	case released == nil:
		return false
	case errors.Is(released, lease.ErrNotHeld):
		return true
	case lost == nil:
		return false
	}
	var le *lease.LostError
	return !errors.As(lost, &le) || le.KeyHeldUntil.IsZero() || returned.After(le.KeyHeldUntil)
}

// endTerm reports a term's end: lost is its loss (nil: resigned), late
// whether fn returned after the key may have passed on.
func (e *Election) endTerm(ctx context.Context, span trace.Span, t Term, lost error, late bool) {
	ev := obs.TermEnd{Election: e.cfg.Name, Identity: t.Identity, Fence: t.Fence, Held: time.Since(t.Start),
		Change: obs.TermResigned, Late: late}
	var le *lease.LostError
	if errors.As(lost, &le) {
		ev.Change, ev.Loss, ev.Err = obs.TermLost, obs.LossReason(le.Reason), lost
	}
	e.rec.EndTerm(ctx, span, ev)
}

// setLeading records the live term, nil between terms, and since when.
func (e *Election) setLeading(ts *termState) {
	e.mu.Lock()
	e.leading, e.since = ts, time.Now()
	if ts != nil {
		e.since, e.last = ts.term.Start, ts.term.Fence
	}
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

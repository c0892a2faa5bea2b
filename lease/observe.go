package lease

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Every other signal is one obs event built where it happens; an Acquire's
// takes the steps below, which its wait and its failures need.

// observeAcquire records the Acquire that ev describes and ends its span.
func (s *settings) observeAcquire(ctx context.Context, span trace.Span, ev acquireEvent) {
	s.rec.EndAcquire(ctx, span, obs.Acquire{Lock: s.Name, Result: ev.Result, Duration: ev.Duration, Fence: ev.Fence,
		Attempts: ev.Attempts, Err: acquireFailure(ev)})
}

// acquireFailure is the failure an acquire is recorded with, if any.
// Contention is an answer, and a caller that gave up before anything was
// sent (its context ended) is no failure of the lock. The error recorded
// (span, log) is the cause without the caller's key, which unknownError's
// message carries: keys are request input and may hold secrets; telemetry
// names them only by hash unless telemetry.Config.RawKeys.
func acquireFailure(ev acquireEvent) error {
	switch {
	case ev.Result == obs.AcquireUnknown:
		return withoutKey(ev.Err)
	case ev.Result == obs.AcquireError && !errors.Is(ev.Err, context.Canceled) && !errors.Is(ev.Err, context.DeadlineExceeded):
		return ev.Err
	}
	return nil
}

// observeWaitStart counts the caller as waiting for a contended lease the
// first time its Acquire backs off; the later backoffs of the same wait add
// nothing.
func (s *settings) observeWaitStart(ctx context.Context, ev *acquireEvent) {
	if ev.waiting {
		return
	}
	start := clock.Now()
	s.rec.WaitStarted(ctx, s.Name)
	// Marked only once counted: a report that panicked added nothing to
	// the gauge, so the end must not take anything off it.
	ev.waiting, ev.waitStart = true, start
}

// observeWaitEnd records the end of the acquire's wait, if it waited: the
// caller off the waiting gauge, and the wait's time by result. Acquire
// defers it, so that no way out of a wait leaves the gauge counting it.
func (s *settings) observeWaitEnd(ctx context.Context, ev *acquireEvent) {
	if !ev.waiting {
		return
	}
	ev.waiting = false
	s.rec.WaitEnded(ctx, obs.Wait{Lock: s.Name, Result: waitResult(ctx, ev), Waited: clock.Now() - ev.waitStart})
}

// waitResult says how a wait ended, from the acquire's result and error and
// the caller's context (ctx, or one derived from it).
func waitResult(ctx context.Context, ev *acquireEvent) obs.WaitResult {
	switch ev.Result {
	case obs.AcquireAcquired:
		return obs.WaitAcquired
	case obs.AcquireUnknown:
		return obs.WaitUnknown
	case obs.AcquireContended:
		// The last contended answer stands. Alone (the error itself, not
		// one that wraps it), it says the wait's bound passed; joined with
		// another error, that error stopped the wait early: the caller's
		// context (cancelled, or a deadline that passed before its timer
		// fired), or an attempt that could not be sent in time.
		if _, alone := ev.Err.(*NotAcquiredError); alone {
			return obs.WaitTimedOut
		}
		if ev.Err != nil && (ctx.Err() != nil || errors.Is(ev.Err, context.DeadlineExceeded)) {
			return obs.WaitCancelled
		}
	}
	// Closed, refused, not sent, or a panic: no answer came after the
	// contended one.
	return obs.WaitError
}

// withoutKey returns an unknown acquire's cause without the caller's key.
// (A function of its own: the errors.As target escapes, and only unknown
// acquires should pay that allocation.)
func withoutKey(err error) error {
	var unknown *unknownError
	if errors.As(err, &unknown) {
		return fmt.Errorf("lease: acquire result unknown: %w", unknown.Err)
	}
	return err
}

// The middleware reports on a lease's work (a late completion) through the
// lease's own telemetry: obs.LeaseRecorder, its one seam into this package.
func init() {
	obs.LeaseRecorder = func(ctx context.Context) *obs.Recorder {
		if l := FromContext(ctx); l != nil {
			return l.set.rec
		}
		return nil
	}
}

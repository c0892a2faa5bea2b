package lease

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// Every observation point records telemetry first (metrics, span events,
// logs), then calls the caller's hooks with the same event.

func (s *settings) observeAcquire(ctx context.Context, span trace.Span, ev AcquireEvent) {
	// Contention is an answer, and a caller that gave up before anything
	// was sent (its context ended) is no failure of the lock.
	//
	// The error recorded (span, log) is the cause without the caller's key,
	// which UnknownError's message carries: keys are request input and may
	// hold secrets; telemetry names them only by hash unless WithRawKeys.
	var failure error
	switch {
	case ev.Result == Unknown:
		failure = withoutKey(ev.Err)
	case ev.Result == Failed && !errors.Is(ev.Err, context.Canceled) && !errors.Is(ev.Err, context.DeadlineExceeded):
		failure = ev.Err
	}
	s.rec.EndAcquire(ctx, span, s.name, string(ev.Result), ev.Duration, ev.Fence, ev.Attempts, failure)
	if h := s.hooks.AcquireDone; h != nil {
		h(ctx, ev)
	}
}

func (s *settings) observeResolution(ctx context.Context, ev ResolutionEvent) {
	s.rec.UnknownResolved(ctx, s.name, string(ev.Resolution), ev.Err)
	if h := s.hooks.UnknownResolved; h != nil {
		h(ctx, ev)
	}
}

func (s *settings) observeRenewal(ctx context.Context, ev RenewalEvent) {
	s.rec.Renewal(ctx, s.name, string(ev.Result), ev.Duration)
	if ev.Result != Renewed {
		s.rec.RenewalFailed(ctx, s.name, string(ev.Result), ev.Fence, ev.Err)
	}
	if h := s.hooks.RenewalDone; h != nil {
		h(ctx, ev)
	}
}

func (s *settings) observeLoss(ctx context.Context, ev LossEvent) {
	s.rec.Lost(ctx, s.name, string(ev.Reason), ev.Fence, ev.Err)
	if h := s.hooks.Lost; h != nil {
		h(ctx, ev)
	}
}

func (s *settings) observeCommit(ctx context.Context, ev CommitEvent) {
	s.rec.Committed(ctx, s.name, string(ev.Outcome), ev.Remaining, ev.Fence)
	if h := s.hooks.CommitDone; h != nil {
		h(ctx, ev)
	}
}

func (s *settings) observeRelease(ctx context.Context, ev ReleaseEvent) {
	s.rec.Released(ctx, s.name, string(ev.Result), ev.Held, ev.Lost, ev.SinceLoss)
	if h := s.hooks.ReleaseDone; h != nil {
		h(ctx, ev)
	}
}

// withoutKey returns an unknown acquire's cause without the caller's key.
// (A function of its own: the errors.As target escapes, and only unknown
// acquires should pay that allocation.)
func withoutKey(err error) error {
	var unknown *UnknownError
	if errors.As(err, &unknown) {
		return fmt.Errorf("lease: acquire result unknown: %w", unknown.Err)
	}
	return err
}

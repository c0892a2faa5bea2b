package obs

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The lease side. Each method records one moment of a lease's life; the
// lease package calls them, and callers of other lock implementations can
// too. lock is the bounded lock name; results, reasons and outcomes come from
// the lease package's closed sets.

// StartAcquire starts the lease.acquire span, a child of ctx's span, carrying
// the lock name and the key's hash (or the key, with WithRawKeys).
func (t *Recorder) StartAcquire(ctx context.Context, lock, key, keyHash string) (context.Context, trace.Span) {
	keyAttr := attribute.String(t.keyField(key, keyHash))
	// Attributes go on after the start, and only on a recording span: an
	// acquire that is not sampled allocates nothing for them.
	ctx, span := t.tracer.Start(ctx, SpanAcquire, acquireStart...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrLockName, lock), keyAttr)
	}
	return ctx, span
}

var acquireStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// EndAcquire records an Acquire call's result and latency and ends its span.
// failure is the error of an unknown or failed acquire (nil when acquired or
// contended: contention is not an error); it sets the span status to Error
// and is logged at Warn.
func (t *Recorder) EndAcquire(ctx context.Context, span trace.Span, lock, result string, d time.Duration, fence int64, attempts int, failure error) {
	o := t.lock(lock, AttrResult, result)
	t.acquires.Add(ctx, 1, o.add...)
	t.acquireDuration.Record(ctx, d.Seconds(), o.record...)
	if fence > 0 {
		t.active.Add(ctx, 1, t.lock(lock, "", "").add...)
	}
	switch {
	case !span.IsRecording():
	case fence > 0:
		span.SetAttributes(attribute.String(AttrResult, result), attribute.Int(AttrAttempts, attempts), attribute.Int64(AttrFence, fence))
	default:
		span.SetAttributes(attribute.String(AttrResult, result), attribute.Int(AttrAttempts, attempts))
	}
	if failure != nil {
		span.RecordError(failure)
		span.SetStatus(codes.Error, result)
		t.warn(ctx, "lockwatch: acquire failed; the work must not run", slog.String(AttrLockName, lock),
			slog.String(AttrResult, result), slog.Any("error", failure))
	}
	span.End()
}

// WaitStarted records a caller starting to wait for a contended lease: one
// more caller waiting, until WaitEnded. ctx is the lease.acquire span's.
func (t *Recorder) WaitStarted(ctx context.Context, lock string) {
	t.waiting.Add(ctx, 1, t.lock(lock, "", "").add...)
}

// WaitEnded records the end of a wait that WaitStarted recorded: one caller
// waiting less, and the time it waited by result (a WaitResult).
func (t *Recorder) WaitEnded(ctx context.Context, lock, result string, waited time.Duration) {
	// The gauge first: whatever happens next, the caller no longer waits.
	t.waiting.Add(ctx, -1, t.lock(lock, "", "").add...)
	t.waitDuration.Record(ctx, waited.Seconds(), t.lock(lock, AttrResult, result).record...)
}

// UnknownResolved records how the clean-up of an unknown acquire ended.
func (t *Recorder) UnknownResolved(ctx context.Context, lock, resolution string, err error) {
	t.resolutions.Add(ctx, 1, t.lock(lock, AttrResult, resolution).add...)
	t.warn(ctx, "lockwatch: unknown acquire cleaned up", withErr(err, slog.String(AttrLockName, lock), slog.String(AttrResult, resolution))...)
}

// Renewal records one lease's renewal result and the round trip of the
// pipeline it went in.
func (t *Recorder) Renewal(ctx context.Context, lock, result string, d time.Duration) {
	t.renewals.Add(ctx, 1, t.lock(lock, AttrResult, result).add...)
	t.renewalDuration.Record(ctx, d.Seconds(), t.lock(lock, "", "").record...)
}

// RenewalFailed marks a failed renewal on ctx's span and logs it. The loss
// that follows is reported by Lost.
func (t *Recorder) RenewalFailed(ctx context.Context, lock, result string, fence int64, err error) {
	trace.SpanFromContext(ctx).AddEvent(EventRenewalFailed, trace.WithAttributes(
		attribute.String(AttrLockName, lock), attribute.String(AttrResult, result), attribute.Int64(AttrFence, fence)))
	t.warn(ctx, "lockwatch: renewal failed", withErr(err, slog.String(AttrLockName, lock), slog.String(AttrResult, result),
		slog.Int64(AttrFence, fence))...)
}

// Lost records a lease turning LOST: one loss, one active lease less, one
// piece of work running past its lease until Released.
func (t *Recorder) Lost(ctx context.Context, lock, reason string, fence int64, err error) {
	t.losses.Add(ctx, 1, t.lock(lock, AttrReason, reason).add...)
	one := t.lock(lock, "", "").add
	t.active.Add(ctx, -1, one...)
	t.overrunning.Add(ctx, 1, one...)
	trace.SpanFromContext(ctx).AddEvent(EventLost, trace.WithAttributes(
		attribute.String(AttrLockName, lock), attribute.String(AttrReason, reason), attribute.Int64(AttrFence, fence)))
	t.warn(ctx, "lockwatch: lease lost; its work is cancelled", withErr(err, slog.String(AttrLockName, lock),
		slog.String(AttrReason, reason), slog.Int64(AttrFence, fence))...)
}

// Committed records what became of a Commit call (its decision, and the
// write's result when fn ran) and the validity left at its decision.
func (t *Recorder) Committed(ctx context.Context, lock, outcome string, remaining time.Duration, fence int64) {
	t.commits.Add(ctx, 1, t.lock(lock, AttrResult, outcome).add...)
	t.commitRemaining.Record(ctx, remaining.Seconds(), t.lock(lock, "", "").record...)
	trace.SpanFromContext(ctx).AddEvent(EventCommit, trace.WithAttributes(
		attribute.String(AttrLockName, lock), attribute.String(AttrResult, outcome),
		attribute.Float64(AttrRemaining, remaining.Seconds()), attribute.Int64(AttrFence, fence)))
}

// Released records the end of a lease's work: the release result and hold
// time, and for a lease lost earlier the cancellation latency (loss to
// release) and one overrunning piece of work less.
func (t *Recorder) Released(ctx context.Context, lock, result string, held time.Duration, lost bool, sinceLoss time.Duration) {
	t.releases.Add(ctx, 1, t.lock(lock, AttrResult, result).add...)
	one := t.lock(lock, "", "")
	t.holdDuration.Record(ctx, held.Seconds(), one.record...)
	if lost {
		t.cancellation.Record(ctx, sinceLoss.Seconds(), one.record...)
		t.overrunning.Add(ctx, -1, one.add...)
		return
	}
	t.active.Add(ctx, -1, one.add...)
}

// LateCompletion records work that finished successfully after its lease was
// lost, a potential stale write, and marks ctx's span.
func (t *Recorder) LateCompletion(ctx context.Context, lock string) {
	t.lateCompletions.Add(ctx, 1, t.lock(lock, "", "").add...)
	trace.SpanFromContext(ctx).AddEvent(EventLateCompletion, trace.WithAttributes(attribute.String(AttrLockName, lock)))
	t.warn(ctx, "lockwatch: work completed after its lease was lost", slog.String(AttrLockName, lock))
}

// keyField is the attribute a key is shown under: its hash, or the key
// itself with WithRawKeys.
func (t *Recorder) keyField(key, keyHash string) (name, value string) {
	if t.rawKeys {
		return AttrKey, key
	}
	return AttrKeyHash, keyHash
}

// ForceReleased records an administrator's forced release of a key from a
// holder and logs it at Warn whatever its result: taking a key from a
// running holder is an event an operator must be able to find afterwards.
// holder is the hash of the holder's owner token it was asked to end, fence
// the newest minted for the key.
func (t *Recorder) ForceReleased(ctx context.Context, lock, key, keyHash, result, holder string, fence int64, err error) {
	t.forceReleases.Add(ctx, 1, t.lock(lock, AttrResult, result).add...)
	attrs := []slog.Attr{slog.String(AttrLockName, lock), slog.String(t.keyField(key, keyHash)), slog.String(AttrResult, result),
		slog.String(AttrHolder, holder), slog.Int64(AttrFence, fence)}
	msg := "lockwatch: key released by force; its holder loses its lease at its next renewal"
	switch {
	case result == string(ReleaseNotHeld):
		msg = "lockwatch: forced release changed nothing: that holder does not hold the key"
	case err != nil:
		msg = "lockwatch: forced release outcome unknown; the key may or may not be free"
		attrs = withErr(err, attrs...)
	}
	t.warn(ctx, msg, attrs...)
}

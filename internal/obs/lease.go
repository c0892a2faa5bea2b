package obs

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The lease side. Each method records one moment of a lease's life from
// one event value; the lease package calls them, and callers of other lock
// implementations can too. Lock is the bounded lock name; results, reasons
// and outcomes come from the closed sets of sets.go.

// Key is a caller's key as telemetry may show it: Hash, the key's hash as
// in its Redis keys, unless the Recorder shows raw keys (Config.RawKeys).
type Key struct{ Raw, Hash string }

// Acquire is one Acquire call after its last attempt.
type Acquire struct {
	Lock     string
	Result   AcquireResult
	Duration time.Duration // from the first send to the result, waits included
	Fence    int64         // when acquired
	Attempts int
	// Err is the failure of an unknown or failed acquire: nil when
	// acquired, contended, or given up by its caller, none of which is a
	// failure of the lock.
	Err error
}

// Wait is the end of a wait for a contended lease.
type Wait struct {
	Lock   string
	Result WaitResult
	Waited time.Duration
}

// Resolution is how the clean-up of an unknown acquire ended.
type Resolution struct {
	Lock   string
	Result ResolutionResult
	Err    error // when unresolved
}

// Renewal is one lease's part of a renewal batch.
type Renewal struct {
	Lock     string
	Result   RenewalResult
	Duration time.Duration // round trip of the pipeline it went in
	Fence    int64
	Err      error
}

// Loss is a lease turning LOST.
type Loss struct {
	Lock   string
	Reason LossReason
	Fence  int64
	Err    error
}

// Commit is what became of one Commit call.
type Commit struct {
	Lock      string
	Result    CommitResult
	Remaining time.Duration // validity left when Commit decided
	Fence     int64
}

// Release is the end of a lease's work: its first Release.
type Release struct {
	Lock   string
	Result ReleaseResult
	Held   time.Duration // from the acquire's send
	// Lost says the lease was lost first, SinceLoss how long before the
	// release: the cancellation latency of the work it protected.
	Lost      bool
	SinceLoss time.Duration
}

// ForceRelease is an administrator's forced release of a key from a holder.
type ForceRelease struct {
	Lock   string
	Key    Key
	Result ReleaseResult
	Holder string // the hash of the owner token it was asked to end
	Fence  int64  // the newest minted for the key
	Err    error
}

// StartAcquire starts the lease.acquire span, a child of ctx's span,
// carrying the lock name and the key's hash (or the key, with raw keys).
func (t *Recorder) StartAcquire(ctx context.Context, lock string, key Key) (context.Context, trace.Span) {
	keyAttr := attribute.String(t.keyField(key))
	// Attributes go on after the start, and only on a recording span: an
	// acquire that is not sampled allocates nothing for them.
	ctx, span := t.tracer.Start(ctx, SpanAcquire, acquireStart...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(AttrLockName, lock), keyAttr)
	}
	return ctx, span
}

var acquireStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// EndAcquire records an Acquire call's result and latency and ends span,
// its lease.acquire span. A failure (ev.Err) sets the span status to Error
// and is logged at Warn.
func (t *Recorder) EndAcquire(ctx context.Context, span trace.Span, ev Acquire) {
	result := string(ev.Result)
	o := t.lock(ev.Lock, AttrResult, result)
	t.acquires.Add(ctx, 1, o.add...)
	t.acquireDuration.Record(ctx, ev.Duration.Seconds(), o.record...)
	if ev.Fence > 0 {
		t.active.Add(ctx, 1, t.lock(ev.Lock, "", "").add...)
	}
	switch {
	case !span.IsRecording():
	case ev.Fence > 0:
		span.SetAttributes(attribute.String(AttrResult, result), attribute.Int(AttrAttempts, ev.Attempts),
			attribute.Int64(AttrFence, ev.Fence))
	default:
		span.SetAttributes(attribute.String(AttrResult, result), attribute.Int(AttrAttempts, ev.Attempts))
	}
	if ev.Err != nil {
		span.RecordError(ev.Err)
		span.SetStatus(codes.Error, result)
		t.warn(ctx, "lockwatch: acquire failed; the work must not run", slog.String(AttrLockName, ev.Lock),
			slog.String(AttrResult, result), slog.Any("error", ev.Err))
	}
	span.End()
}

// Activated counts a lease taken without an acquire of its own to record
// (a semaphore's permit: EndAcquire counts the others), so that its
// release or loss takes off the active gauge what was put on it.
func (t *Recorder) Activated(ctx context.Context, lock string) {
	t.active.Add(ctx, 1, t.lock(lock, "", "").add...)
}

// WaitStarted records a caller starting to wait for a contended lease: one
// more caller waiting, until WaitEnded. ctx is the lease.acquire span's.
func (t *Recorder) WaitStarted(ctx context.Context, lock string) {
	t.waiting.Add(ctx, 1, t.lock(lock, "", "").add...)
}

// WaitEnded records the end of a wait that WaitStarted recorded: one caller
// waiting less, and the time it waited by result.
func (t *Recorder) WaitEnded(ctx context.Context, ev Wait) {
	// The gauge first: whatever happens next, the caller has stopped waiting.
	t.waiting.Add(ctx, -1, t.lock(ev.Lock, "", "").add...)
	t.waitDuration.Record(ctx, ev.Waited.Seconds(), t.lock(ev.Lock, AttrResult, string(ev.Result)).record...)
}

// UnknownResolved records how the clean-up of an unknown acquire ended.
func (t *Recorder) UnknownResolved(ctx context.Context, ev Resolution) {
	t.resolutions.Add(ctx, 1, t.lock(ev.Lock, AttrResult, string(ev.Result)).add...)
	t.warn(ctx, "lockwatch: unknown acquire cleaned up", withErr(ev.Err, slog.String(AttrLockName, ev.Lock),
		slog.String(AttrResult, string(ev.Result)))...)
}

// Renewal records one lease's renewal result and the round trip of the
// pipeline it went in. A renewal that failed is marked on ctx's span and
// logged; the loss that follows is reported by Lost.
func (t *Recorder) Renewal(ctx context.Context, ev Renewal) {
	result := string(ev.Result)
	t.renewals.Add(ctx, 1, t.lock(ev.Lock, AttrResult, result).add...)
	t.renewalDuration.Record(ctx, ev.Duration.Seconds(), t.lock(ev.Lock, "", "").record...)
	if ev.Result == RenewalRenewed {
		return
	}
	trace.SpanFromContext(ctx).AddEvent(EventRenewalFailed, trace.WithAttributes(
		attribute.String(AttrLockName, ev.Lock), attribute.String(AttrResult, result), attribute.Int64(AttrFence, ev.Fence)))
	t.warn(ctx, "lockwatch: renewal failed", withErr(ev.Err, slog.String(AttrLockName, ev.Lock),
		slog.String(AttrResult, result), slog.Int64(AttrFence, ev.Fence))...)
}

// Lost records a lease turning LOST: one loss, one active lease less, one
// piece of work running past its lease until Released.
func (t *Recorder) Lost(ctx context.Context, ev Loss) {
	reason := string(ev.Reason)
	t.losses.Add(ctx, 1, t.lock(ev.Lock, AttrReason, reason).add...)
	one := t.lock(ev.Lock, "", "").add
	t.active.Add(ctx, -1, one...)
	t.overrunning.Add(ctx, 1, one...)
	trace.SpanFromContext(ctx).AddEvent(EventLost, trace.WithAttributes(
		attribute.String(AttrLockName, ev.Lock), attribute.String(AttrReason, reason), attribute.Int64(AttrFence, ev.Fence)))
	t.log(ctx, lossLevel(ev.Reason), "lockwatch: lease lost; its work is cancelled", withErr(ev.Err, slog.String(AttrLockName, ev.Lock),
		slog.String(AttrReason, reason), slog.Int64(AttrFence, ev.Fence))...)
}

// Committed records what became of a Commit call and the validity left at
// its decision, and marks ctx's span.
func (t *Recorder) Committed(ctx context.Context, ev Commit) {
	t.commits.Add(ctx, 1, t.lock(ev.Lock, AttrResult, string(ev.Result)).add...)
	t.commitRemaining.Record(ctx, ev.Remaining.Seconds(), t.lock(ev.Lock, "", "").record...)
	trace.SpanFromContext(ctx).AddEvent(EventCommit, trace.WithAttributes(
		attribute.String(AttrLockName, ev.Lock), attribute.String(AttrResult, string(ev.Result)),
		attribute.Float64(AttrRemaining, ev.Remaining.Seconds()), attribute.Int64(AttrFence, ev.Fence)))
}

// Released records the end of a lease's work: the release result and hold
// time, and for a lease lost earlier the cancellation latency (loss to
// release) and one overrunning piece of work less.
func (t *Recorder) Released(ctx context.Context, ev Release) {
	t.releases.Add(ctx, 1, t.lock(ev.Lock, AttrResult, string(ev.Result)).add...)
	one := t.lock(ev.Lock, "", "")
	t.holdDuration.Record(ctx, ev.Held.Seconds(), one.record...)
	if ev.Lost {
		t.cancellation.Record(ctx, ev.SinceLoss.Seconds(), one.record...)
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
// itself with raw keys.
func (t *Recorder) keyField(k Key) (name, value string) {
	if t.rawKeys {
		return AttrKey, k.Raw
	}
	return AttrKeyHash, k.Hash
}

// ForceReleased records an administrator's forced release of a key and logs
// it at Warn whatever its result: taking a key from a running holder is an
// event an operator must be able to find afterwards.
func (t *Recorder) ForceReleased(ctx context.Context, ev ForceRelease) {
	result := string(ev.Result)
	t.forceReleases.Add(ctx, 1, t.lock(ev.Lock, AttrResult, result).add...)
	attrs := []slog.Attr{slog.String(AttrLockName, ev.Lock), slog.String(t.keyField(ev.Key)), slog.String(AttrResult, result),
		slog.String(AttrHolder, ev.Holder), slog.Int64(AttrFence, ev.Fence)}
	msg := "lockwatch: key released by force; its holder loses its lease at its next renewal"
	switch {
	case ev.Result == ReleaseNotHeld:
		msg = "lockwatch: forced release changed nothing: that holder does not hold the key"
	case ev.Err != nil:
		msg = "lockwatch: forced release outcome unknown; the key may or may not be free"
		attrs = withErr(ev.Err, attrs...)
	}
	t.warn(ctx, msg, attrs...)
}

package obs

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// The permits side: package permits reports each semaphore's limit, each
// Acquire (its wait, its result) and each permit's end. Semaphore is the
// bounded semaphore name.

// permits are the instruments of the permits side.
type permits struct {
	permitsHeld     metric.Int64UpDownCounter
	permitsLimit    metric.Int64UpDownCounter
	permitsWaiting  metric.Int64UpDownCounter
	permitsAcquires metric.Int64Counter
	permitsWait     metric.Float64Histogram
	permitsLosses   metric.Int64Counter
}

// PermitAcquire is one Acquire of a permit, from its start to its result.
type PermitAcquire struct {
	Semaphore string
	Start     time.Time
	Unknown   error // an attempt on a permit whose result is unknown

	waiting   bool // counted on the waiting gauge
	waitStart time.Time
}

// PermitsLimit sets the semaphore's limit gauge to limit.
func (t *Recorder) PermitsLimit(ctx context.Context, semaphore string, limit int) {
	t.mu.Lock()
	delta := int64(limit) - t.limit[semaphore]
	t.limit[semaphore] = int64(limit)
	t.mu.Unlock()
	one := t.opts(AttrSemaphore, semaphore, "", "")
	t.permitsLimit.Add(ctx, delta, one.add...)
	t.permitsHeld.Add(ctx, 0, one.add...)
	t.permitsWaiting.Add(ctx, 0, one.add...)
}

// PermitWaitStarted counts the Acquire on the waiting gauge.
func (t *Recorder) PermitWaitStarted(ctx context.Context, ev *PermitAcquire) {
	t.permitsWaiting.Add(ctx, 1, t.opts(AttrSemaphore, ev.Semaphore, "", "").add...)
	ev.waiting, ev.waitStart = true, time.Now()
}

// PermitAcquired records the Acquire's result (and its wait's, if it
// waited), and a permit taken on the held gauge.
func (t *Recorder) PermitAcquired(ctx context.Context, ev *PermitAcquire, result AcquireResult) {
	sem := ev.Semaphore
	t.permitsAcquires.Add(ctx, 1, t.opts(AttrSemaphore, sem, AttrResult, string(result)).add...)
	if result == AcquireAcquired {
		t.permitsHeld.Add(ctx, 1, t.opts(AttrSemaphore, sem, "", "").add...)
	}
	if !ev.waiting {
		return
	}
	ev.waiting = false
	t.permitsWaiting.Add(ctx, -1, t.opts(AttrSemaphore, sem, "", "").add...)
	res := permitWaitResult(ctx, result)
	t.permitsWait.Record(ctx, time.Since(ev.waitStart).Seconds(), t.opts(AttrSemaphore, sem, AttrResult, string(res)).record...)
}

// permitWaitResult says how a wait ended, as the lease's wait results do.
func permitWaitResult(ctx context.Context, result AcquireResult) WaitResult {
	switch {
	case result == AcquireAcquired:
		return WaitAcquired
	case result == AcquireUnknown:
		return WaitUnknown
	case result == AcquireContended && ctx.Err() == nil:
		return WaitTimedOut // the wait's bound passed, not the caller's
	case result == AcquireContended:
		return WaitCancelled
	}
	return WaitError
}

// PermitEnded takes a permit off the held gauge; a lost one (reason not
// empty) is counted by reason and logged at Warn.
func (t *Recorder) PermitEnded(ctx context.Context, semaphore string, reason LossReason, err error) {
	t.permitsHeld.Add(ctx, -1, t.opts(AttrSemaphore, semaphore, "", "").add...)
	if reason == "" {
		return
	}
	t.permitsLosses.Add(ctx, 1, t.opts(AttrSemaphore, semaphore, AttrReason, string(reason)).add...)
	t.warn(ctx, "lockwatch: permit lost; its work is cancelled",
		withErr(err, slog.String(AttrSemaphore, semaphore), slog.String(AttrReason, string(reason)))...)
}

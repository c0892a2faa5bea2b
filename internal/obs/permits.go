package obs

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
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

// PermitsLimit sets the semaphore's limit gauge to limit. The
// semaphore's other series exist from then on (introduceSemaphore).
func (t *Recorder) PermitsLimit(ctx context.Context, semaphore string, limit int) {
	t.mu.Lock()
	delta := int64(limit) - t.limit[semaphore]
	t.limit[semaphore] = int64(limit)
	t.mu.Unlock()
	t.permitsLimit.Add(ctx, delta, t.opts(AttrSemaphore, semaphore, "", "").add...)
}

// introduceSemaphore creates a semaphore's counters at zero, by every
// result and reason, and its held and waiting gauges at zero: a
// semaphore none of whose permits was ever taken shows 0 held, not no
// series, against its limit.
func (t *Recorder) introduceSemaphore(result, reason attrKey) {
	one := t.opts(AttrSemaphore, result.first, "", "").add
	zero(t, t.permitsAcquires, result, AcquireResults)
	zero(t, t.permitsLosses, reason, LossReasons)
	t.permitsHeld.Add(context.Background(), 0, one...)
	t.permitsWaiting.Add(context.Background(), 0, one...)
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
	t.log(ctx, lossLevel(reason), "lockwatch: permit lost; its work is cancelled",
		withErr(err, slog.String(AttrSemaphore, semaphore), slog.String(AttrReason, string(reason)))...)
}

// HeldPermit is one permit the process holds, as the debug page lists it.
type HeldPermit struct {
	Semaphore string    // permits.Config.Name
	KeyHash   string    // the semaphore key's hash, as on spans and in Redis
	Namespace string    // its Locker's namespace (lease.Config.Namespace)
	Key       string    // the raw key, only with Config.RawKeys
	Index     int       // the permit's number, 0 to the limit - 1
	Fence     int64     // the permit's fencing token
	Since     time.Time // when Acquire took it
}

// HeldPermits are the permits the process holds: package permits adds
// each from Acquire's return until its release or loss, debugpage lists
// them.
var HeldPermits = &heldPermits{}

type heldPermits struct{ registry[HeldPermit] }

// List returns the held permits by semaphore, then key hash, then index.
func (h *heldPermits) List() []HeldPermit {
	out := h.all()
	slices.SortFunc(out, func(a, b HeldPermit) int {
		return cmp.Or(cmp.Compare(a.Semaphore, b.Semaphore), cmp.Compare(a.KeyHash, b.KeyHash),
			cmp.Compare(a.Index, b.Index), cmp.Compare(a.Fence, b.Fence))
	})
	return out
}

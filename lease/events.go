package lease

import (
	"context"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// LossReason says why a lease was lost (LostError.Reason). LOST is final:
// nothing renews a lost lease. The values are those of the reason label of
// lockwatch_lease_losses_total.
type LossReason = obs.LossReason

// Loss reasons.
const (
	// LossRenewalRejected: a renewal found the key gone or owned by another
	// token (deleted or overwritten outside lockwatch, or expired and taken).
	LossRenewalRejected = obs.LossRenewalRejected
	// LossForceReleased: a renewal found that an administrator took the
	// key from this lease (Locker.ForceRelease, lockwatch release
	// --force). Told apart from renewal_rejected while the force's mark is
	// among the 16 newest ends on the key's record; after that the same
	// loss reads renewal_rejected.
	LossForceReleased = obs.LossForceReleased
	// LossRenewalUnknown: a renewal timed out or failed in transport. The
	// lease cannot be proven held, and lockwatch never renews it again.
	LossRenewalUnknown = obs.LossRenewalUnknown
	// LossDeadline: the cancel point (validity minus the safety margin) came
	// without a confirmed renewal, e.g. while a renewal was still in flight.
	LossDeadline = obs.LossDeadline
	// LossMaxHold: the bounded hold time was reached; renewal stops.
	LossMaxHold = obs.LossMaxHold
	// LossClosed: the Locker was closed while the lease was held (a
	// graceful shutdown: alerts on losses exclude it).
	LossClosed = obs.LossClosed
)

// hooks are called at every point where lock safety can be observed, right
// after the Locker's telemetry has recorded the same event: the seam the
// tests observe a Locker through. Every field is optional. They run
// synchronously on lockwatch's goroutines (the renewal scheduler among
// them). The context is the caller's (acquire) or the lease's (everything
// after).
type hooks struct {
	onAcquire    func(context.Context, acquireEvent)
	onResolution func(context.Context, resolutionEvent)
	onRenewal    func(context.Context, renewalEvent)
	onLoss       func(context.Context, lossEvent)
	onCommit     func(context.Context, commitEvent)
	onRelease    func(context.Context, releaseEvent)
}

// join returns hooks that call h's, then o's.
func (h hooks) join(o hooks) hooks {
	return hooks{
		onAcquire:    join(h.onAcquire, o.onAcquire),
		onResolution: join(h.onResolution, o.onResolution),
		onRenewal:    join(h.onRenewal, o.onRenewal),
		onLoss:       join(h.onLoss, o.onLoss),
		onCommit:     join(h.onCommit, o.onCommit),
		onRelease:    join(h.onRelease, o.onRelease),
	}
}

func join[E any](a, b func(context.Context, E)) func(context.Context, E) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, e E) {
		a(ctx, e)
		b(ctx, e)
	}
}

// acquireEvent describes one Acquire call, after its last attempt.
type acquireEvent struct {
	Name      string // bounded lock name (WithName)
	Key       string // caller's key: high cardinality, never a metric label
	Result    obs.AcquireResult
	Duration  time.Duration // from the first send to the result, waits included
	Attempts  int
	Fence     int64         // when acquired
	HolderTTL time.Duration // when contended
	Err       error         // when unknown or failed

	// The wait for a contended lease, from the first contended answer
	// Acquire backed off from (clock.Now): waiting while it is counted on
	// the waiting gauge.
	waiting   bool
	waitStart time.Duration
}

// resolutionEvent reports the clean-up of an unknown acquire.
type resolutionEvent struct {
	Name, Key string
	Result    obs.ResolutionResult
	Err       error // when unresolved
}

// renewalEvent reports one lease's part of a renewal batch.
type renewalEvent struct {
	Name, Key string
	Fence     int64
	Result    obs.RenewalResult
	Duration  time.Duration // round trip of the batch it was sent in
	BatchSize int
	Err       error
}

// lossEvent reports a lease turning LOST.
type lossEvent struct {
	Name, Key string
	Fence     int64
	Reason    LossReason
	Held      time.Duration // since the acquire was sent
	Err       error
}

// commitEvent reports one Commit call: its decision, and when fn ran, what
// became of the write (reported once fn has returned).
type commitEvent struct {
	Name, Key string
	Fence     int64
	Result    obs.CommitResult
	Remaining time.Duration // validity left when Commit decided
	Err       error         // why it was refused, or fn's error
}

// releaseEvent reports the first Release of a lease: the end of its work.
type releaseEvent struct {
	Name, Key string
	Fence     int64
	Result    obs.ReleaseResult
	Held      time.Duration // acquire send to Release
	// SinceLoss is the time from the loss to Release when the lease was lost
	// first: the cancellation latency of the work it protected. Zero
	// otherwise.
	SinceLoss time.Duration
	Lost      bool
	Err       error
}

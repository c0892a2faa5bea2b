package lease

import (
	"context"
	"time"
)

// AcquireResult is the closed set of acquire outcomes.
type AcquireResult string

// Acquire outcomes.
const (
	Acquired  AcquireResult = "acquired"
	Contended AcquireResult = "contended"
	Unknown   AcquireResult = "unknown"
	Failed    AcquireResult = "error" // a definite failure, nothing sent: a bad option, a closed Locker, the deadline passed while queued
)

// Resolution says how the background clean-up of an unknown acquire ended.
type Resolution string

// Unknown-acquire resolutions.
const (
	// ResolvedReleased: the acquire had in fact taken the lock; the
	// conditional release removed it, and barred its owner token so that a
	// retry of it still on its way cannot take the key again.
	ResolvedReleased Resolution = "released"
	// ResolvedAbsent: the key did not hold the acquire's owner token when
	// the clean-up ran. The clean-up barred that token on the key's fence
	// record, so a copy of the acquire that lands later (one still unread in
	// a stalled server's socket buffer) cannot take the key.
	ResolvedAbsent Resolution = "absent"
	// ResolvedUnresolved: the conditional release failed too; the key may be
	// held until its TTL runs out.
	ResolvedUnresolved Resolution = "unresolved"
)

// RenewalResult is the closed set of renewal outcomes.
type RenewalResult string

// Renewal outcomes.
const (
	Renewed         RenewalResult = "renewed"
	RenewalRejected RenewalResult = "rejected"
	RenewalUnknown  RenewalResult = "unknown"
)

// LossReason says why a lease was lost. LOST is final: nothing renews a lost
// lease.
type LossReason string

// Loss reasons.
const (
	// LossRenewalRejected: a renewal found the key gone or owned by another
	// token (deleted or overwritten outside lockwatch, or expired and taken).
	LossRenewalRejected LossReason = "renewal_rejected"
	// LossRenewalUnknown: a renewal timed out or failed in transport. The
	// lease cannot be proven held, and lockwatch never renews it again.
	LossRenewalUnknown LossReason = "renewal_unknown"
	// LossDeadline: the cancel point (validity minus the safety margin) came
	// without a confirmed renewal, e.g. while a renewal was still in flight.
	LossDeadline LossReason = "deadline"
	// LossMaxHold: the bounded hold time was reached; renewal stops.
	LossMaxHold LossReason = "max_hold"
	// LossClosed: the Locker was closed while the lease was held (a
	// graceful shutdown: alerts on losses exclude it).
	LossClosed LossReason = "closed"
)

// CommitOutcome is the closed set of Commit outcomes.
type CommitOutcome string

// Commit outcomes.
const (
	Committed        CommitOutcome = "committed"
	CommitNearExpiry CommitOutcome = "near_expiry" // ran, but below the warning threshold
	CommitRefused    CommitOutcome = "refused"
)

// ReleaseResult is the closed set of Release outcomes.
type ReleaseResult string

// Release outcomes.
const (
	Released       ReleaseResult = "released"
	ReleaseNotHeld ReleaseResult = "not_held"
	ReleaseUnknown ReleaseResult = "unknown"
)

// Hooks are called at every point where lock safety can be observed, right
// after the Locker's telemetry has recorded the same event. Every field
// is optional. Hooks run synchronously on lockwatch's goroutines (the
// renewal scheduler among them), so they must be fast and must not block.
// The context is the caller's (acquire) or the lease's (everything after).
type Hooks struct {
	AcquireDone     func(context.Context, AcquireEvent)
	UnknownResolved func(context.Context, ResolutionEvent)
	RenewalDone     func(context.Context, RenewalEvent)
	Lost            func(context.Context, LossEvent)
	CommitDone      func(context.Context, CommitEvent)
	ReleaseDone     func(context.Context, ReleaseEvent)
}

// join returns hooks that call h's, then o's.
func (h Hooks) join(o Hooks) Hooks {
	return Hooks{
		AcquireDone:     join(h.AcquireDone, o.AcquireDone),
		UnknownResolved: join(h.UnknownResolved, o.UnknownResolved),
		RenewalDone:     join(h.RenewalDone, o.RenewalDone),
		Lost:            join(h.Lost, o.Lost),
		CommitDone:      join(h.CommitDone, o.CommitDone),
		ReleaseDone:     join(h.ReleaseDone, o.ReleaseDone),
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

// AcquireEvent describes one Acquire call, after its last attempt.
type AcquireEvent struct {
	Name      string // bounded lock name (WithName)
	Key       string // caller's key: high cardinality, never a metric label
	Result    AcquireResult
	Duration  time.Duration // from the first send to the result, waits included
	Attempts  int
	Fence     int64         // when acquired
	HolderTTL time.Duration // when contended
	Err       error         // when unknown or failed
}

// ResolutionEvent reports the clean-up of an unknown acquire.
type ResolutionEvent struct {
	Name, Key  string
	Resolution Resolution
	Err        error // when unresolved
}

// RenewalEvent reports one lease's part of a renewal batch.
type RenewalEvent struct {
	Name, Key string
	Fence     int64
	Result    RenewalResult
	Duration  time.Duration // round trip of the batch it was sent in
	BatchSize int
	Err       error
}

// LossEvent reports a lease turning LOST.
type LossEvent struct {
	Name, Key string
	Fence     int64
	Reason    LossReason
	Held      time.Duration // since the acquire was sent
	Err       error
}

// CommitEvent reports one Commit call's decision (before fn runs).
type CommitEvent struct {
	Name, Key string
	Fence     int64
	Outcome   CommitOutcome
	Remaining time.Duration // validity left when Commit decided
	Err       error         // why it was refused
}

// ReleaseEvent reports the first Release of a lease: the end of its work.
type ReleaseEvent struct {
	Name, Key string
	Fence     int64
	Result    ReleaseResult
	Held      time.Duration // acquire send to Release
	// SinceLoss is the time from the loss to Release when the lease was lost
	// first: the cancellation latency of the work it protected. Zero
	// otherwise.
	SinceLoss time.Duration
	Lost      bool
	Err       error
}

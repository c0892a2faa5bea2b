package lease

import (
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// LossReason says why a lease was lost (LostError.Reason). LOST is final:
// nothing renews a lost lease. The values are those of the reason label of
// lockwatch_lease_losses_total.
type LossReason string

// Loss reasons.
const (
	// LossRenewalRejected: a renewal found the key gone or owned by another
	// token (deleted or overwritten outside lockwatch, or expired and taken).
	LossRenewalRejected LossReason = "renewal_rejected"
	// LossForceReleased: a renewal found that an administrator took the
	// key from this lease (Locker.ForceRelease, lockwatch release
	// --force). Told apart from renewal_rejected while the force's mark is
	// among the 16 newest ends on the key's record; after that the same
	// loss reads renewal_rejected.
	LossForceReleased LossReason = "force_released"
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
	// LossYielded: a reader of a shared lease (permits.Shared) stopped
	// renewing for a writer; the cancel point came before the key expired.
	LossYielded LossReason = "yielded"
)

// acquireEvent describes one Acquire call, after its last attempt.
type acquireEvent struct {
	Result   obs.AcquireResult
	Duration time.Duration // from the first send to the result, waits included
	Attempts int
	Fence    int64 // when acquired
	Err      error // when contended, unknown or failed

	// The wait for a contended lease, from the first contended answer
	// Acquire backed off from (clock.Now): waiting while it is counted on
	// the waiting gauge.
	waiting   bool
	waitStart time.Duration
}

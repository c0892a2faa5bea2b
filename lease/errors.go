package lease

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors, for errors.Is. The structured errors below wrap them and
// carry the details, for errors.As.
var (
	// ErrNotAcquired: another owner holds the lease (after the optional wait).
	ErrNotAcquired = errors.New("lease: not acquired")
	// ErrUnknown: the acquire may or may not have taken effect in Redis (a
	// timeout, a lost reply, a reply too late to be useful, or missing
	// replica acknowledgements). The work must not run.
	ErrUnknown = errors.New("lease: acquire result unknown")
	// ErrLost: the lease was lost; its context is cancelled with a cause that
	// wraps this error.
	ErrLost = errors.New("lease: lost")
	// ErrExpiring: Commit refused because the validity left is below the hard
	// margin.
	ErrExpiring = errors.New("lease: too close to expiry")
	// ErrReleased: the lease was released; it is the cause of its context
	// after Release.
	ErrReleased = errors.New("lease: released")
	// ErrNotHeld: Release found the key gone or owned by another holder: the
	// lease had already expired in Redis.
	ErrNotHeld = errors.New("lease: not held at release")
	// ErrClosed: the Locker was closed.
	ErrClosed = errors.New("lease: locker closed")
	// errInvalid: a Config field or a key was rejected; the error says which.
	errInvalid = errors.New("lease: invalid argument")
)

// NotAcquiredError is returned when another owner holds the lease.
type NotAcquiredError struct {
	Key string
	// HolderTTL is the holder's remaining TTL as Redis reported it on the last
	// attempt: a good Retry-After. Zero when Redis reported no expiry.
	HolderTTL time.Duration
	// HeldHere is true when, as Acquire returned, a live lease of this
	// process held the key: one of the Locker's, or of a Locker sharing
	// its scheduler (Locker.With). The holder is then another caller in
	// this process (another request on this replica), not another
	// replica; false says nothing either way.
	HeldHere bool
	// HolderReplica is the holder's replica name (its Locker's
	// Config.Replica) as Redis answered the last attempt: "" when the
	// holder's Locker has none, or when no one holder refused (a
	// semaphore's refusal: each permit has a holder of its own). Only the
	// name that process chose, never its owner token.
	HolderReplica string
}

func (e *NotAcquiredError) Error() string {
	by := "another owner"
	switch {
	case e.HeldHere:
		by = "another lease of this process"
	case e.HolderReplica != "":
		by = fmt.Sprintf("replica %q", e.HolderReplica)
	}
	return fmt.Sprintf("lease: not acquired: %q held by %s for %v more", shortKey(e.Key), by, e.HolderTTL)
}

// markHeldHere sets HeldHere on err's NotAcquiredError, if it has one.
func (lk *Locker) markHeldHere(err error, lockKey string) {
	var busy *NotAcquiredError
	if errors.As(err, &busy) {
		busy.HeldHere = lk.sched.holds(lockKey)
	}
}

// Unwrap makes errors.Is(err, ErrNotAcquired) hold.
func (e *NotAcquiredError) Unwrap() error { return ErrNotAcquired }

// unknownError is returned when an acquire's outcome cannot be known:
// errors.Is matches ErrUnknown and the cause. The Locker cleans it up in the
// background with a conditional release under the same owner token
// (lockwatch_lease_unknown_resolutions_total counts how that ends).
type unknownError struct {
	Key string
	// Err is what made the result unknown (a timeout, a transport error, a
	// late reply, too few replica acknowledgements).
	Err error
}

func (e *unknownError) Error() string {
	return fmt.Sprintf("lease: acquire result unknown for %q: %v", shortKey(e.Key), e.Err)
}

// Unwrap makes errors.Is match both ErrUnknown and the underlying cause.
func (e *unknownError) Unwrap() []error { return []error{ErrUnknown, e.Err} }

// LostError is the cause of a lost lease's context and the error Commit
// returns after the loss.
type LostError struct {
	Reason LossReason
	// Err is the renewal error behind a renewal_unknown loss, else nil.
	Err error
	// KeyHeldUntil is, by this process's clock, the earliest instant the
	// key may have expired in Redis: the cancel point plus the safety
	// margin. Work that stops before it cannot have overlapped a next
	// holder's, unless the key was taken by force or Redis lost it. Zero
	// when Redis said the key was not the lease's (renewal_rejected,
	// force_released).
	KeyHeldUntil time.Time
}

func (e *LostError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("lease: lost (%s): %v", e.Reason, e.Err)
	}
	return fmt.Sprintf("lease: lost (%s)", e.Reason)
}

// Unwrap makes errors.Is(err, ErrLost) hold.
func (e *LostError) Unwrap() error { return ErrLost }

// shortKey bounds a caller key for error messages: keys are request input
// and may be megabytes long.
func shortKey(key string) string {
	const limit = 64
	if len(key) <= limit {
		return key
	}
	return key[:limit] + "…"
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errInvalid}, args...)...)
}

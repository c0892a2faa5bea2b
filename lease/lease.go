package lease

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/script"
)

// state is ACTIVE → LOST | RELEASED. LOST is final: no renewal revives it.
type state int32

const (
	stateActive state = iota
	stateLost
	stateReleased
)

// Lease is one held lease. Its methods are safe for concurrent use.
type Lease struct {
	locker    *Locker
	set       *settings
	key       string
	lockKey   string
	owner     string      // the owner token
	renew     script.Call // built once: the renewal and the release send these
	release   script.Call
	token     fence.Token
	sentAt    time.Duration // when the acquire that took it was sent
	maxHoldAt time.Duration // instant at which max_hold ends it; 0 for none
	yielded   bool          // renewal stopped for a writer (yield); under the scheduler's mutex
	ctx       context.Context
	cancel    context.CancelCauseFunc

	state     atomic.Int32
	cancelAt  atomic.Int64 // instant: cancelled then unless a renewal is confirmed first
	loss      atomic.Pointer[LostError]
	releasing atomic.Bool // the first Release does the work

	// Guarded by the scheduler's mutex.
	renewAt     time.Duration
	renewIdx    int // position in the renewal queue, -1 when not queued
	deadlineIdx int // position in the deadline queue, -1 when not queued
	lostAt      time.Duration
	renewals    int           // confirmed renewals (Snapshot)
	lastRenewal time.Duration // send to applied reply, of the last confirmed one
}

// Key returns the caller's key.
func (l *Lease) Key() string {
	if l == nil {
		return ""
	}
	return l.key
}

// Fence returns the lease's fence, the number of its token: strictly
// greater than every fence minted for this key before, and below 2^53 (safe
// in JSON). It is what logs and a program's own comparisons show; a
// resource is given the Token, which also says which key it is for and who
// minted it.
func (l *Lease) Fence() int64 {
	if l == nil {
		return 0
	}
	return l.token.Fence
}

// Token returns the lease's fencing token: its fence, scoped to the lease's
// key and namespace, signed when the Locker has secrets (Config.Secrets). Send
// it with every write to the protected resource (Commit passes it; the
// middleware's propagators send it in its wire form), which rejects tokens
// older than the newest it accepted, and tokens of other keys.
func (l *Lease) Token() fence.Token {
	if l == nil {
		return fence.Token{}
	}
	return l.token
}

// Context returns the lease's context. It is derived from the context given to
// Acquire (so it carries its values and ends with it) and is cancelled when the
// lease is lost, before the key can expire in Redis, with a cause that
// satisfies errors.Is(context.Cause(ctx), ErrLost) and errors.As(...,
// *LostError). After Release its cause is ErrReleased.
func (l *Lease) Context() context.Context {
	if l == nil {
		return noLeaseCtx
	}
	return l.ctx
}

// Remaining returns how long the lease stays valid without another confirmed
// renewal, by the local monotonic clock: the time until its context would be
// cancelled. The key outlives this in Redis by at least the safety margin.
// Zero once lost or released.
func (l *Lease) Remaining() time.Duration {
	if l == nil || state(l.state.Load()) != stateActive {
		return 0
	}
	left := time.Duration(l.cancelAt.Load()) - clock.Now()
	if left <= 0 {
		l.locker.sched.expire(l)
		return 0
	}
	return left
}

// Err returns nil while the lease is active, its *LostError once lost, and
// ErrReleased once released. Past the cancel point it reports the loss at
// once, even if the scheduler has not come to it yet: it ends the lease
// itself (the context is cancelled before Err returns).
func (l *Lease) Err() error {
	if l == nil {
		return errNoLease
	}
	if state(l.state.Load()) == stateActive && time.Duration(l.cancelAt.Load()) <= clock.Now() {
		l.locker.sched.expire(l)
	}
	switch state(l.state.Load()) {
	case stateLost:
		return l.loss.Load()
	case stateReleased:
		return ErrReleased
	}
	return nil
}

// deadlineReason says why a lease reached its cancel point at t: its max
// hold, or a renewal that was not confirmed in time.
func (l *Lease) deadlineReason(t time.Duration) LossReason {
	switch {
	case l.yielded:
		return LossYielded
	case l.maxHoldAt > 0 && t >= l.maxHoldAt:
		return LossMaxHold
	}
	return LossDeadline
}

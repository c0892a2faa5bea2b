package lease

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/groupcommit"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/script"
)

// errLateReply makes an acquire unknown whose reply came after its deadline
// (the acquire timeout or the caller's) or after the lease's cancel point:
// it was taken, but too late to be safe to use.
var errLateReply = errors.New("acquire reply arrived after its deadline or the lease's cancel point")

// Acquire takes the lease on key, or fails:
//
//   - ErrNotAcquired (*NotAcquiredError with the holder's remaining TTL):
//     another owner holds it, also after the optional wait (Config.Wait).
//   - ErrUnknown (wrapping the cause): the acquire may have taken effect;
//     the work must not run. Any error once the script may have been sent
//     counts, a Redis error reply too (go-redis retries). The Locker
//     releases the key conditionally in the background (the next Acquire
//     of the key through it waits for that).
//   - any other error: nothing was taken. Nothing was sent (an invalid
//     key, ErrClosed, ctx or the deadline over before the send),
//     or the script refused before writing, as every copy of it would.
//
// One round trip, one script. The lease's context derives from ctx: cancel
// ctx and the work is cancelled too (the lease stays held until Release or
// ReleaseAsync, always called). To bound only the wait, use Config.Wait, not
// a deadline on ctx.
func (lk *Locker) Acquire(ctx context.Context, key string) (*Lease, error) {
	set := lk.set
	keys := keysOf(set.Namespace, key)
	actx, span := set.rec.StartAcquire(ctx, set.Name, obs.Key{Raw: key, Hash: hashTag(keys.Lock)})
	start := clock.Now()
	ev := acquireEvent{Result: obs.AcquireError}
	defer set.observeWaitEnd(actx, &ev) // every way out of a wait, a panic included
	a := &acquisition{lk: lk, ctx: ctx, actx: actx, parent: ctx, set: set, key: key, keys: keys}
	var l *Lease
	l, ev.Result, ev.Err = a.run(&ev)
	lk.markHeldHere(ev.Err, keys.Lock)
	ev.Attempts = a.attempts
	ev.Duration = clock.Now() - start
	if l != nil {
		ev.Fence = l.token.Fence
		// A report that panics (in a logger's handler, say) must not leave
		// a lease renewed until Close that nobody can release: the panic
		// goes on, the lease ends.
		observed := false
		defer func() {
			if !observed {
				l.ReleaseAsync(ctx)
			}
		}()
		set.observeAcquire(actx, span, ev)
		observed = true
		return l, nil
	}
	set.observeAcquire(actx, span, ev)
	return nil, ev.Err
}

// acquisition is one Acquire's attempts on one key. Redis calls go under
// actx (the lease.acquire span); ctx ends the wait, and the lease's
// context derives from parent (ctx itself, unless a semaphore's Acquire
// ends a slot's wait on its own: acquireSlot).
type acquisition struct {
	lk                *Locker
	ctx, actx, parent context.Context
	set               *settings
	key               string
	keys              leasekeys.Keys
	until             time.Duration // the end of the wait (Config.Wait)
	attempts          int
}

// run makes attempts until one ends the Acquire: the lease, or the
// outcome of the last attempt and the error the Acquire returns. ev
// reports the wait, if any.
func (a *acquisition) run(ev *acquireEvent) (*Lease, obs.AcquireResult, error) {
	if err := a.admit(); err != nil {
		return nil, obs.AcquireError, err
	}
	a.until = clock.Now() + a.set.Wait
	var last *NotAcquiredError // the last answer, while waiting
	for n := 0; ; n++ {
		if n > 0 && a.lk.closed.Load() {
			return nil, obs.AcquireError, ErrClosed
		}
		acq, r := a.try()
		out, err := a.classify(r, last)
		switch {
		case out == obs.AcquireAcquired:
			return a.take(acq, r)
		case out == obs.AcquireUnknown:
			a.lk.resolveUnknown(a.actx, a.set, acq, r.abandoned)
			return nil, out, &unknownError{Key: a.key, Err: err}
		case err != nil: // an error, or contended and the caller gone
			return nil, out, err
		}
		last = &NotAcquiredError{Key: a.key, HolderTTL: r.holderTTL, HolderReplica: r.holderReplica}
		if r.queued {
			wt := a.lk.wake.join(a.ctx, acq.channel, acq.owner)
			l, out, err, again := a.await(&queued{acq: acq, base: r.sentAt, wt: wt}, last, ev)
			if !again {
				return l, out, err
			}
			continue
		}
		if err := a.wait(n, last, ev); err != nil {
			return nil, out, err
		}
	}
}

// admit refuses an Acquire that cannot start, then waits for the Locker's
// clean-ups and asynchronous releases of the key (pendingReleases).
func (a *acquisition) admit() error {
	switch {
	case a.key == "":
		return invalidf("empty key")
	case a.lk.closed.Load():
		return ErrClosed
	}
	if err := context.Cause(a.ctx); err != nil {
		return err
	}
	return a.lk.pending.wait(a.ctx, a.keys.Lock)
}

// try makes one attempt, a claim with an owner token of its own: an
// answered attempt is barred in Redis (acquire.lua), so a late copy of it
// can neither take the key nor be mistaken for the next attempt, whose
// validity counts from its own send. The Locker's ghosts of the key go
// along, forgotten once Redis has answered.
func (a *acquisition) try() (acquireArgs, attemptResult) {
	a.attempts++
	lockKey := a.keys.Lock
	ghosts := a.lk.ghosts.of(lockKey)
	entry := a.entryTTL()
	acq := acquireArgs{keys: a.keys, owner: newOwner(a.set.ownerSuffix), ttl: a.set.ttlArg, retention: a.set.retentionArg, queue: entry, ghosts: ghosts}
	if entry > 0 {
		acq.channel = a.lk.wake.channel(a.set.Namespace)
	}
	r := a.lk.attempt(a.actx, a.set, lockKey, acq.call())
	if r.definite() {
		a.lk.ghosts.barred(lockKey, ghosts)
	}
	return acq, r
}

// classify says what an attempt came to, and the error it ends the
// Acquire with: acquired, in time to use the lease; unknown, it may have
// taken effect; error, nothing was taken. Contended ends the Acquire only
// when the caller's end came while the attempt queued after an answer: as
// in a backoff sleep, the last answer stands. (An attempt that expired by
// the acquire timeout in the queue, Redis congested, is an error.)
func (a *acquisition) classify(r attemptResult, last *NotAcquiredError) (obs.AcquireResult, error) {
	switch {
	case r.notSent && r.callerEnded && last != nil:
		return obs.AcquireContended, errors.Join(last, r.err)
	case r.notSent:
		return obs.AcquireError, r.err
	case r.refused != nil:
		return obs.AcquireError, r.refused
	case r.err != nil:
		return obs.AcquireUnknown, r.err
	case r.acquired && (r.late || r.sentAt+a.set.cancelAfter() <= clock.Now()):
		return obs.AcquireUnknown, errLateReply
	case r.acquired:
		return obs.AcquireAcquired, nil
	}
	return obs.AcquireContended, nil
}

// take hands the lease the attempt took to the scheduler. A Locker closed
// meanwhile never makes it active: the key is freed, the Acquire fails.
func (a *acquisition) take(acq acquireArgs, r attemptResult) (*Lease, obs.AcquireResult, error) {
	l := a.newLease(acq, r)
	if !a.lk.sched.add(l) {
		l.cancel(ErrClosed)
		_, _ = a.lk.releaseKey(a.ctx, a.set, a.keys.Lock, l.release)
		return nil, obs.AcquireError, ErrClosed
	}
	return l, obs.AcquireAcquired, nil
}

// wait sleeps before the next attempt after n contended answers that did
// not queue it (a barred attempt, a waiter with ReplicationAcks): a
// full-jitter backoff capped by the holder's TTL and the wait's end. It
// returns the error the Acquire ends with instead: last alone once the
// wait's bound has passed, joined with ctx's cause when ctx ends.
func (a *acquisition) wait(n int, last *NotAcquiredError, ev *acquireEvent) error {
	left := a.until - clock.Now()
	if left <= 0 {
		return last
	}
	pause := min(left, backoff(a.set, n, last.HolderTTL))
	a.set.observeWaitStart(a.actx, ev)
	if err := sleep(a.ctx, pause); err != nil {
		return errors.Join(last, err)
	}
	return nil
}

// attemptResult is one acquire round trip: acquired with a fence, contended
// with the holder's TTL, or an error. notSent marks an error before anything
// reached Redis (the caller's context ended while the call queued).
type attemptResult struct {
	acquired  bool
	queued    bool // contended, and enqueued in the key's wait queue (or still there)
	gone      bool // a refresh found no live entry
	fence     int64
	holderTTL time.Duration
	// holderReplica is the holder's replica a contended answer names
	// ("": none, or not one a Config.Replica could be).
	holderReplica string
	sentAt        time.Duration
	late          bool // the reply came after the call's deadline
	notSent       bool
	// callerEnded: not sent because the caller's context ended or its
	// deadline passed, not the acquire timeout.
	callerEnded bool
	refused     error             // the script refused before writing anything (a definite failure)
	abandoned   *groupcommit.Call // in flight when the caller's context ended
	err         error
}

// attempt sends one acquire through the Locker's group commit (or, with a
// replication ack, in a pipeline of its own with WAIT).
func (lk *Locker) attempt(ctx context.Context, set *settings, lockKey string, acq script.Call) attemptResult {
	if set.ReplicationAcks > 0 {
		ctx, cancel := context.WithTimeout(ctx, set.AcquireTimeout+set.ReplicationTimeout)
		defer cancel()
		sentAt := clock.Now()
		r := lk.attemptWithAck(ctx, set, lockKey, acq)
		r.sentAt = sentAt
		return r
	}
	return lk.send(ctx, set, lockKey, acq, parseAcquire)
}

// notSentError is why a call of an Acquire (an attempt, a refresh) was
// not sent: the caller's context, its deadline, or the acquire timeout.
func notSentError(ctx context.Context, set *settings, callerBound bool) error {
	err := context.Cause(ctx)
	switch {
	case err == nil && callerBound:
		// The caller's deadline passed before its context's timer fired.
		err = context.DeadlineExceeded
	case err == nil:
		err = fmt.Errorf("lease: the acquire timeout (%v) passed before the acquire could be sent", set.AcquireTimeout)
	}
	return err
}

// abandonedError is why a call sent was not answered.
func abandonedError(ctx context.Context, set *settings) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	// The cause of an unknownError, whose message has the prefix.
	return fmt.Errorf("no reply within the acquire's deadline (acquire timeout %v)", set.AcquireTimeout)
}

// send sends call through the key's group commit with the acquire
// timeout, as attempt sends an acquire, and gives its reply to parse.
func (lk *Locker) send(ctx context.Context, set *settings, lockKey string, call script.Call, parse func(*redis.Cmd) attemptResult) attemptResult {
	deadline, callerBound := callDeadline(ctx, set.AcquireTimeout)
	c := &groupcommit.Call{Script: call, Ctx: ctx, Deadline: deadline}
	switch lk.lanes.ForKey(ctx, lockKey).Do(ctx, c) {
	case groupcommit.NotSent:
		return attemptResult{notSent: true, callerEnded: callerBound || ctx.Err() != nil, err: notSentError(ctx, set, callerBound)}
	case groupcommit.Abandoned:
		return attemptResult{err: abandonedError(ctx, set), abandoned: c}
	}
	r := parse(c.Cmd())
	r.sentAt, r.late = c.SentAt(), clock.Now() > c.Deadline
	return r
}

// definite tells whether Redis has answered the attempt with its script's
// own reply (acquired, contended, or barred): its writes, the bars of the
// ghosts it carried among them, are in Redis.
func (r attemptResult) definite() bool {
	return r.err == nil && !r.notSent && r.refused == nil
}

// callDeadline is the instant a call's reply stops being useful: timeout
// from now, or the caller's deadline if sooner (callerBound).
func callDeadline(ctx context.Context, timeout time.Duration) (deadline time.Duration, callerBound bool) {
	t := clock.Now()
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left < timeout { // time.Until saturates: never t + a huge value
			return t + left, true
		}
	}
	return t + timeout, false
}

// parseAcquire reads the acquire script's reply, {1, fence}, {0, pttl,
// replica}, {2, pttl, place, replica} or {0, -3}, from the reply as read
// (Int64Slice would copy it).
func parseAcquire(cmd *redis.Cmd) attemptResult {
	vals, err := cmd.Slice()
	if err != nil {
		if redis.HasErrorPrefix(err, "LOCKWATCH refused:") {
			return attemptResult{refused: fmt.Errorf("lease: %s", strings.TrimPrefix(err.Error(), "LOCKWATCH refused: "))}
		}
		return attemptResult{err: err}
	}
	var flag, n int64
	ok := len(vals) >= 2 && len(vals) <= 4
	if ok {
		flag, ok = vals[0].(int64)
	}
	if ok {
		n, ok = vals[1].(int64)
	}
	switch {
	case ok && flag == 1 && n > 0:
		return attemptResult{acquired: true, fence: n}
	case ok && (flag == 0 || flag == 2):
		return attemptResult{queued: flag == 2, holderTTL: max(0, time.Duration(n)*time.Millisecond), holderReplica: replicaIn(vals)}
	}
	return attemptResult{err: fmt.Errorf("acquire script returned %v", vals)}
}

// newLease makes the lease the attempt took, with the renewal and the
// release of its owner token.
func (a *acquisition) newLease(acq acquireArgs, r attemptResult) *Lease {
	set, sentAt := a.set, r.sentAt
	token := fence.Mint(set.Namespace, a.key, r.fence, set.Secrets)
	l := &Lease{
		locker:      a.lk,
		set:         set,
		key:         a.key,
		lockKey:     a.keys.Lock,
		owner:       acq.owner,
		renew:       acq.renewal(token.Fence).call(),
		release:     acq.release().call(),
		token:       token,
		sentAt:      sentAt,
		renewAt:     sentAt + set.renewEvery,
		renewIdx:    -1,
		deadlineIdx: -1,
	}
	l.ctx, l.cancel = leaseContext(a.parent, l)
	cancelAt := sentAt + set.cancelAfter()
	if set.MaxHold > 0 {
		l.maxHoldAt = sentAt + set.MaxHold
		cancelAt = min(cancelAt, l.maxHoldAt)
	}
	l.cancelAt.Store(int64(cancelAt))
	return l
}

// resolveUnknown cleans up after an unknown acquire, in the background, with
// the acquire's own owner token: nothing else can hold that token, so the
// clean-up can never remove another holder's lock. It runs the release
// script, which deletes the lock if the acquire took it and either way bars
// the token, so that a copy or retry of the acquire still on its way (in a
// stalled server's socket buffer, say) cannot take the key later. An acquire
// abandoned in flight is waited for first. An Acquire of the same key
// through this Locker waits for the clean-up (pendingReleases), instead of
// finding the unknown acquire's lock and answering contended for a TTL.
func (lk *Locker) resolveUnknown(ctx context.Context, set *settings, acq acquireArgs, abandoned *groupcommit.Call) {
	lockKey, resolve := acq.keys.Lock, acq.release().call()
	lk.pending.add(lockKey)
	lk.background(func() {
		defer lk.pending.done(lockKey)
		if abandoned != nil {
			abandoned.Settled()
		}
		n, err := lk.releaseKey(ctx, set, lockKey, resolve)
		ev := obs.Resolution{Lock: set.Name, Result: obs.ResolutionAbsent}
		switch {
		case err != nil:
			ev.Result, ev.Err = obs.ResolutionUnresolved, err
			lk.ghosts.add(lockKey, acq.owner, set.TTL)
		case n == 1:
			ev.Result = obs.ResolutionReleased
		}
		set.rec.UnknownResolved(context.WithoutCancel(ctx), ev)
	})
}

// backoff returns the n-th wait of a full-jitter exponential backoff: uniform
// in [0, min(max, min·2^n, holder's TTL)), so waiters spread out and none
// sleeps past the moment the key expires anyway.
func backoff(set *settings, attempt int, holderTTL time.Duration) time.Duration {
	ceiling := set.BackoffMax
	if attempt < 62 && set.BackoffMin <= ceiling>>attempt {
		ceiling = set.BackoffMin << attempt // no overflow: below backoffMax
	}
	if holderTTL > 0 {
		ceiling = min(ceiling, holderTTL+time.Millisecond)
	}
	return mrand.N(ceiling) + 1
}

// sleep waits d, or until ctx ends (its cause).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// A waiting Acquire queues: the attempt that finds the key held enqueues
// its owner token in the same script (acquire.lua), and the key is handed
// to the oldest live entry inside the script that frees it (a release, a
// leave, or any script that finds the lock expired), which mints the
// entry's fence and publishes the grant (wakeups). The waiter refreshes its
// entry every third of its life, or every BackoffMax if sooner (the bound
// on how late a missed grant is learnt); an entry not refreshed expires,
// and the hand-off skips it. Its validity counts from the send of its last
// script answered waiting: that script ran while the entry was queued, so
// before the grant, and the key cannot expire before that send + TTL. The
// protocol is the FIFO scenario of model/lease.pml.

// entryTTL is how long the attempt's queue entry lives without a refresh:
// the TTL, cut to the wait left (at least 1ms); 0 when it does not wait,
// or waits with ReplicationAcks: a grant made by another client's script
// cannot be acknowledged by this one's WAIT, so such a waiter retries
// with backoff (and still never passes a queued one).
func (a *acquisition) entryTTL() int64 {
	if a.set.Wait <= 0 || a.set.ReplicationAcks > 0 {
		return 0
	}
	return max(1, min(a.set.TTL, a.until-clock.Now()).Milliseconds())
}

// queued is one attempt waiting in the key's queue.
type queued struct {
	acq  acquireArgs
	base time.Duration // the send of its last script answered waiting
	wt   *waiter       // nil: grants are not listened for
}

// await waits for the queued attempt's grant. It returns the lease, or
// what the Acquire ends with, or again: the entry is gone (expired
// unrefreshed) or the grant came too late to use, and a next attempt
// queues anew.
func (a *acquisition) await(q *queued, last *NotAcquiredError, ev *acquireEvent) (l *Lease, out obs.AcquireResult, err error, again bool) {
	if !a.lk.enterQueue() {
		a.leave(q)
		return nil, obs.AcquireError, ErrClosed, false
	}
	defer a.lk.queued.Done()
	a.set.observeWaitStart(a.actx, ev)
	for n := 0; ; n++ {
		fence, stop := a.pause(q, n)
		switch {
		case fence > 0:
			return a.granted(q, fence)
		case stop != nil:
			a.leave(q)
			if errors.Is(stop, ErrClosed) {
				return nil, obs.AcquireError, ErrClosed, false
			}
			return nil, obs.AcquireContended, errors.Join(last, context.Cause(a.ctx)), false
		case a.until <= clock.Now():
			a.leave(q)
			return nil, obs.AcquireContended, last, false
		}
		q.acq.queue = a.entryTTL()
		r := a.lk.send(a.actx, a.set, a.keys.Lock, q.acq.refresh().call(), parseRefresh)
		switch {
		case r.acquired:
			return a.granted(q, r.fence)
		case r.gone:
			a.forget(q)
			return nil, obs.AcquireContended, nil, true
		case r.queued:
			q.base = r.sentAt
			last.HolderTTL, last.HolderReplica = r.holderTTL, r.holderReplica
		default:
			return a.refreshFailed(q, r, last)
		}
	}
}

// pause waits for q's grant (its fence) until the next refresh is due, the
// wait ends, or a confirmation of the grant channel's subscription (a
// grant before it went to nobody) wakes it. stop is ErrClosed when the
// Locker closes, the context's cause when it ends.
func (a *acquisition) pause(q *queued, n int) (fence int64, stop error) {
	every := min(time.Duration(a.entryTTL())*time.Millisecond/3, a.set.BackoffMax)
	var grants <-chan int64
	var wake <-chan struct{}
	if q.wt != nil {
		grants, wake = q.wt.grant, q.wt.wake
	} else {
		every = min(every, backoff(a.set, n, 0)) // no messages: the refresh is the poll
	}
	t := time.NewTimer(max(0, min(every, a.until-clock.Now())))
	defer t.Stop()
	select {
	case f := <-grants:
		return f, nil
	case <-wake:
	case <-t.C:
	case <-a.lk.wake.stop:
		return 0, ErrClosed
	case <-a.ctx.Done():
		return 0, context.Cause(a.ctx)
	}
	return 0, nil
}

// refreshFailed ends the wait whose refresh failed, as a failed attempt
// ends it: nothing sent is an error (contention, if the caller ended), an
// unanswered refresh may have been granted the key and is cleaned up as
// an unknown acquire is.
func (a *acquisition) refreshFailed(q *queued, r attemptResult, last *NotAcquiredError) (*Lease, obs.AcquireResult, error, bool) {
	out, err := a.classify(r, last)
	if out == obs.AcquireUnknown {
		a.forget(q)
		a.lk.resolveUnknown(a.actx, a.set, q.acq, r.abandoned)
		return nil, out, &unknownError{Key: a.key, Err: err}, false
	}
	a.leave(q)
	return nil, out, err, false
}

// granted takes the lease the hand-off granted q, valid from q's base, or
// leaves the key if its cancel point has passed already (again), or if
// the Locker is closing (a grant that raced Close's stop).
func (a *acquisition) granted(q *queued, fence int64) (*Lease, obs.AcquireResult, error, bool) {
	if a.lk.closed.Load() {
		a.leave(q)
		return nil, obs.AcquireError, ErrClosed, false
	}
	if q.base+a.set.cancelAfter() <= clock.Now() {
		a.leave(q)
		return nil, obs.AcquireContended, nil, true
	}
	a.forget(q)
	l, out, err := a.take(q.acq, attemptResult{acquired: true, fence: fence, sentAt: q.base})
	return l, out, err, false
}

// forget stops listening for q's grant.
func (a *acquisition) forget(q *queued) {
	if q.wt != nil {
		a.lk.wake.leave(q.wt)
		q.wt = nil
	}
}

// leave takes q out of the queue in the background (release.lua, which
// also releases the key if it was granted q meanwhile and hands it on);
// the Locker's next Acquire of the key waits for it, as for a release. A
// leave without a reply makes the token a ghost, as a release does.
func (a *acquisition) leave(q *queued) {
	a.forget(q)
	lk, set, lockKey, release, owner := a.lk, a.set, a.keys.Lock, q.acq.release().call(), q.acq.owner
	ctx := context.WithoutCancel(a.actx)
	lk.pending.add(lockKey)
	lk.background(func() {
		defer lk.pending.done(lockKey)
		if _, err := lk.releaseKey(ctx, set, lockKey, release); err != nil {
			lk.ghosts.add(lockKey, owner, set.TTL)
		}
	})
}

// parseRefresh reads refresh.lua's reply: {1, fence} granted, {2, pttl,
// replica} waiting, {0, -4} gone.
func parseRefresh(cmd *redis.Cmd) attemptResult {
	vals, err := cmd.Slice()
	switch {
	case err != nil && redis.HasErrorPrefix(err, "LOCKWATCH refused:"):
		return attemptResult{refused: fmt.Errorf("lease: %s", strings.TrimPrefix(err.Error(), "LOCKWATCH refused: "))}
	case err != nil:
		return attemptResult{err: err}
	case len(vals) == 2 && vals[0] == int64(1) && toInt(vals[1]) > 0:
		return attemptResult{acquired: true, fence: toInt(vals[1])}
	case len(vals) == 3 && vals[0] == int64(2):
		pttl := time.Duration(toInt(vals[1])) * time.Millisecond
		return attemptResult{queued: true, holderTTL: max(0, pttl), holderReplica: replicaIn(vals)}
	case len(vals) == 2 && vals[0] == int64(0):
		return attemptResult{gone: true}
	}
	return attemptResult{err: fmt.Errorf("refresh script returned %v", vals)}
}

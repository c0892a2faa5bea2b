package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/groupcommit"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/script"
)

// Release ends the lease: renewal stops, its context is cancelled (cause
// ErrReleased, unless it was lost first), and the key is deleted if, and only
// if, it still holds this lease's owner token, so a Release can never delete
// another holder's lock. It runs on a context detached from ctx (which may be
// cancelled already) and bounded by the release timeout. Releases share
// pipelines with the Locker's other acquires and releases (group commit).
//
// Release marks the end of the protected work: for a lease lost earlier, the
// time since the loss is the work's cancellation latency
// (lockwatch_lease_cancellation_latency_seconds). A lost lease is released
// too, in case its key is still there.
//
// It returns nil when the key was deleted, ErrNotHeld when the key had
// already expired or changed hands, and the Redis error when the outcome is
// unknown (the key then expires by its TTL, unless the Locker's next Acquire
// of it takes it over first: the Locker remembers the token, and is never
// refused by one of its own ended leases). A go-redis re-send of the release
// after a lost reply answers what its first copy did (release.lua), while
// that release's mark is among the 16 newest ends of the key. Only the first
// call of Release or ReleaseAsync does anything; later calls return nil.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return errNoLease
	}
	if !l.releasing.CompareAndSwap(false, true) {
		return nil
	}
	return l.deleteKey(ctx, l.end())
}

// ReleaseAsync ends the lease like Release, but does not wait for Redis: the
// work ends now (renewal stops, the context is cancelled, the hold time is
// taken), and the key is deleted in the background, in the next shared
// pipeline. The outcome goes to telemetry. Close waits for releases in
// flight.
//
// It takes the release off the caller's critical path: the middleware calls
// it once the handler has returned, so a request does not wait for the
// second round trip. The lock stays correct: until the delete lands, the key
// is simply still held. An Acquire of the same key through this Locker waits
// for the delete first (up to the release timeout), so a client's next
// request to the same replica does not find its own previous lease (unless
// the delete failed: then the key is held until its TTL); another process
// sees the key held for that round trip (Config.Wait absorbs it). Once Close
// has begun, it releases synchronously.
func (l *Lease) ReleaseAsync(ctx context.Context) {
	if l == nil {
		return
	}
	if !l.releasing.CompareAndSwap(false, true) {
		return
	}
	lk, lockKey := l.locker, l.lockKey
	lk.pending.add(lockKey) // before the context ends: code woken by it may acquire the key
	ev := l.end()
	lk.background(func() {
		defer lk.pending.done(lockKey)
		_ = l.deleteKey(ctx, ev)
	})
}

// end stops the lease (the first half of a release) and returns its release
// event without a result.
func (l *Lease) end() obs.Release {
	lostAt, wasLost, newly := l.locker.sched.remove(l)
	if newly {
		reportLoss(l)
	}
	at := clock.Now()
	l.cancel(ErrReleased)
	ev := obs.Release{Lock: l.set.Name, Held: at - l.sentAt, Lost: wasLost}
	if wasLost {
		ev.SinceLoss = at - lostAt
	}
	return ev
}

// deleteKey deletes the lease's key if it still holds the owner token and
// records the release.
func (l *Lease) deleteKey(ctx context.Context, ev obs.Release) error {
	n, err := l.locker.releaseKey(ctx, l.set, l.lockKey, l.release)
	switch {
	case err != nil:
		ev.Result, err = obs.ReleaseUnknown, fmt.Errorf("lease: release %q: %w", shortKey(l.key), err)
		l.locker.ghosts.add(l.lockKey, l.owner, l.set.TTL)
	case n == 1:
		ev.Result = obs.ReleaseReleased
	default:
		ev.Result, err = obs.ReleaseNotHeld, ErrNotHeld
	}
	l.set.rec.Released(l.ctx, ev)
	return err
}

// releaseKey runs the release script (compare-and-delete on the owner token)
// through the group commit, bounded by the release timeout and detached from
// ctx's cancellation: the key must be freed even when the caller has gone.
// It returns 1 when deleted, 0 when the key was gone or held by another.
func (lk *Locker) releaseKey(ctx context.Context, set *settings, lockKey string, release script.Call) (int64, error) {
	// ctx gives the call its values; the wait ends only at the deadline.
	c := &groupcommit.Call{Script: release, Ctx: ctx, Deadline: clock.Now() + set.ReleaseTimeout}
	switch lk.lanes.ForKey(ctx, lockKey).Do(context.Background(), c) {
	case groupcommit.NotSent:
		return 0, fmt.Errorf("release timeout %v passed before the release could be sent", set.ReleaseTimeout)
	case groupcommit.Abandoned:
		return 0, fmt.Errorf("no reply to the release within the release timeout %v", set.ReleaseTimeout)
	}
	return c.Cmd().Int64()
}

// pendingReleases counts the asynchronous releases in flight per lock key,
// so that an Acquire of the same key through the same Locker waits for them
// instead of finding its own previous lease still holding the key.
type pendingReleases struct {
	n    atomic.Int64 // releases in flight: Acquire looks no further when 0
	mu   sync.Mutex
	keys map[string]*pendingKey
}

type pendingKey struct {
	n    int
	done chan struct{} // closed when n drops to 0
}

func (p *pendingReleases) add(lockKey string) {
	p.n.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = make(map[string]*pendingKey)
	}
	k := p.keys[lockKey]
	if k == nil {
		k = &pendingKey{done: make(chan struct{})}
		p.keys[lockKey] = k
	}
	k.n++
}

func (p *pendingReleases) done(lockKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := p.keys[lockKey]; k != nil {
		if k.n--; k.n == 0 {
			close(k.done)
			delete(p.keys, lockKey)
		}
	}
	p.n.Add(-1)
}

// wait returns once no release of lockKey is in flight, or with ctx's cause.
func (p *pendingReleases) wait(ctx context.Context, lockKey string) error {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	k := p.keys[lockKey]
	p.mu.Unlock()
	if k == nil {
		return nil
	}
	select {
	case <-k.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

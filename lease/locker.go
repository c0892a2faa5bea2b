package lease

import (
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/groupcommit"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/telemetry"
)

// Locker hands out leases on one Redis deployment (a *redis.Client, a
// Sentinel failover client or a *redis.ClusterClient) and renews all of them
// from one scheduler. It is safe for concurrent use; create one per process
// and Close it on shutdown.
type Locker struct {
	*shared
	cfg Config    // as the caller set it, defaults in: With overlays this
	set *settings // cfg resolved
}

// shared is what a Locker and the Lockers derived from it (With) have in
// common: the client, the scheduler, the group commits, and their life.
type shared struct {
	client  redis.UniversalClient
	sched   *scheduler
	lanes   *groupcommit.Lanes // group commits of acquires and releases
	pending pendingReleases
	ghosts  ghosts   // own attempts whose end Redis may not have recorded
	wake    *wakeups // tells waiters of releases
	losses  lossLog  // the last losses, for Snapshot

	mu        sync.Mutex // guards closing and the Add side of bg and queued
	closing   bool
	closed    atomic.Bool
	bg        sync.WaitGroup // clean-ups of unknown acquires, asynchronous releases
	queued    sync.WaitGroup // Acquires in a key's wait queue (enterQueue)
	closeOnce sync.Once
}

// NewLocker returns a Locker using client, whose leases take cfg (the
// zero Config takes every default).
//
// NewLocker panics on a nil client or an invalid cfg: both are programming
// errors that should stop a service at start-up, not surface at the first
// request. The panic message says which field is wrong.
//
// For a lease client, set ContextTimeoutEnabled in the go-redis options so
// that the renewal deadline also bounds the socket read; without it a stalled
// Redis holds a renewal for ReadTimeout (and go-redis retries it up to
// MaxRetries times). The lease is cancelled at its cancel point either way.
func NewLocker(client redis.UniversalClient, cfg Config) *Locker {
	if client == nil {
		panic("lease: NewLocker with a nil client")
	}
	cfg = cfg.withDefaults()
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.New(telemetry.Config{})
	}
	set, err := cfg.settings()
	if err != nil {
		panic(err.Error())
	}
	lk := &Locker{shared: &shared{client: client, lanes: groupcommit.NewLanes(client, maxBatch), wake: newWakeups(client)}, cfg: cfg, set: set}
	lk.sched = newScheduler(lk)
	return lk
}

// With returns a Locker whose leases take the fields of c that are not
// zero in place of lk's, and which shares everything else with lk: the
// client, the scheduler, the group commits, and Close (closing either
// closes both). The middleware makes one per lock name; a caller that
// waits on some keys only makes one with Wait set. With resolves and
// validates once, so make it once, not per acquire. A field With leaves
// zero keeps lk's value, so a Locker without a wait (or a MaxHold, or
// ReplicationAcks) is derived from one that has none.
//
// Unlike NewLocker, With returns an invalid field as an error, since it
// may run while serving (with a name computed from a request, say).
func (lk *Locker) With(c Config) (*Locker, error) {
	cfg := c.over(lk.cfg)
	set, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	return &Locker{shared: lk.shared, cfg: cfg, set: set}, nil
}

// Close loses every lease still held (their contexts are cancelled with reason
// closed; their keys expire by TTL, because their work may still be running),
// stops renewal, and waits for the Locker's goroutines. It does not close the
// Redis client. Release leases before Close for a clean hand-over. Acquire
// after Close returns ErrClosed, and so do the Acquires waiting in a key's
// queue, each of which has left the queue when Close returns. Close is
// idempotent, returns nil, and every call returns only once the first has
// finished.
//
// Close waits for the goroutines that report (telemetry, and so the
// logger's slog handler), so a handler must not call it directly (it
// would wait for itself); one that shuts down starts go locker.Close().
func (lk *Locker) Close() error {
	lk.closeOnce.Do(func() {
		lk.mu.Lock()
		lk.closing = true
		lk.closed.Store(true)
		lk.mu.Unlock()
		lk.wake.stopWaiters()
		lk.queued.Wait()
		lk.sched.close()
		lk.bg.Wait()
		lk.lanes.Close()
		lk.wake.close()
	})
	return nil
}

// enterQueue counts an Acquire that waits in a key's queue until it
// returns, so that Close, which first stops every waiter, returns only
// after each has left its queue: an entry left behind would be granted the
// key, which nobody would then use for up to a TTL. False once Close has
// begun.
func (lk *Locker) enterQueue() bool {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.closing {
		return false
	}
	lk.queued.Add(1)
	return true
}

// background runs f on its own goroutine, waited for by Close. Once Close
// has begun it runs f inline instead, so nothing escapes the wait.
func (lk *Locker) background(f func()) {
	lk.mu.Lock()
	if lk.closing {
		lk.mu.Unlock()
		f()
		return
	}
	lk.bg.Add(1)
	lk.mu.Unlock()
	go func() {
		defer lk.bg.Done()
		f()
	}()
}

// reportLoss reports a lease that has turned LOST (and was cancelled then).
func reportLoss(l *Lease) {
	cause := l.loss.Load()
	l.set.rec.Lost(l.ctx, obs.Loss{Lock: l.set.Name, Reason: obs.LossReason(cause.Reason), Fence: l.token.Fence, Err: cause.Err})
}

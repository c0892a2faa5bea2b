package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// holder is the core that HTTP and both gRPC interceptors share: acquire a
// lease (or a permit, which is a lease too), run the work on its context,
// release it however the work ends (panics included), and tell what the
// caller should answer.
type holder struct {
	locker  *lease.Locker
	cfg     holderConfig
	byName  sync.Map     // lock name → *lease.Locker with Config.Lease and that name
	derived atomic.Int32 // entries in byName
	sems    sync.Map     // semaphoreID → *permits.Semaphore (Config.Permits)
	semN    atomic.Int32 // entries in sems
}

// maxDerived bounds byName and sems: lock names are meant to be a small set
// (routes, methods); past this many, the settings are resolved per request
// instead.
const maxDerived = 1024

func newHolder(locker *lease.Locker, cfg holderConfig) *holder {
	if locker == nil {
		panic("middleware: nil Locker")
	}
	if _, err := locker.With(cfg.lease); err != nil {
		panic("middleware: " + err.Error())
	}
	if cfg.permits < 0 || cfg.permits > permits.MaxLimit {
		panic(fmt.Sprintf("middleware: Permits %d: must be 0 to %d", cfg.permits, permits.MaxLimit))
	}
	return &holder{locker: locker, cfg: cfg}
}

// acquire takes the lease on key, or one of its permits (Config.Permits),
// through a Locker derived once per lock name.
func (h *holder) acquire(ctx context.Context, key, name string) (held, error) {
	lk, err := h.lockerFor(name)
	if err != nil {
		return nil, err
	}
	if h.cfg.permits > 0 {
		return h.acquirePermit(ctx, lk, key, name)
	}
	l, err := lk.Acquire(ctx, key)
	if err != nil {
		return nil, err // not a nil *lease.Lease in a held
	}
	return l, nil
}

// lockerFor is the Locker of name's requests, derived once per lock name
// (lease.Locker.With), so a request does not resolve the lease's settings
// again; past maxDerived names, it derives one per request.
func (h *holder) lockerFor(name string) (*lease.Locker, error) {
	if lk, ok := h.byName.Load(name); ok {
		return lk.(*lease.Locker), nil
	}
	c := h.cfg.lease
	c.Name = name
	lk, err := h.locker.With(c)
	if err != nil {
		return nil, err
	}
	if h.derived.Load() < maxDerived {
		if _, loaded := h.byName.LoadOrStore(name, lk); !loaded {
			h.derived.Add(1)
		}
	}
	return lk, nil
}

// end releases l after its work returned and reports whether the lease was
// lost meanwhile. succeeded says whether the work reported success: success
// after a loss is a late completion, a potential stale write, counted and
// marked on ctx's span. A panicking handler still gets here (deferred), and
// the panic goes on.
//
// The work is over, so the lease ends here (its context is cancelled, its
// hold time taken), but the delete in Redis goes in the background
// (ReleaseAsync) unless Config.SyncRelease is set: the answer does not wait
// for a second round trip.
func (h *holder) end(ctx context.Context, l held, name string, succeeded bool) (lost error) {
	if err := l.Err(); errors.Is(err, lease.ErrLost) {
		lost = err
	}
	if h.cfg.syncRelease {
		_ = l.Release(ctx) // detached and bounded inside Release
	} else {
		l.ReleaseAsync(ctx)
	}
	if lost != nil && succeeded {
		obs.LeaseRecorder(l.Context()).LateCompletion(ctx, name)
	}
	return lost
}

package middleware

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

// holder is the core that HTTP and both gRPC interceptors share: acquire a
// lease, run the work on its context, release it however the work ends
// (panics included), and tell what the caller should answer.
type holder struct {
	locker  *lease.Locker
	cfg     holderConfig
	byName  sync.Map     // lock name → *lease.Locker with Config.Lease and that name
	derived atomic.Int32 // entries in byName
}

// maxDerived bounds byName: lock names are meant to be a small set (routes,
// methods); past this many, the settings are resolved per request instead.
const maxDerived = 1024

func newHolder(locker *lease.Locker, cfg holderConfig) *holder {
	if locker == nil {
		panic("middleware: nil Locker")
	}
	if _, err := locker.With(cfg.lease); err != nil {
		panic("middleware: " + err.Error())
	}
	return &holder{locker: locker, cfg: cfg}
}

// acquire takes the lease through a Locker derived once per lock name
// (lease.Locker.With), so a request does not resolve the lease's settings
// again; past maxDerived names, it derives one per request.
func (h *holder) acquire(ctx context.Context, key, name string) (*lease.Lease, error) {
	if lk, ok := h.byName.Load(name); ok {
		return lk.(*lease.Locker).Acquire(ctx, key)
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
	return lk.Acquire(ctx, key)
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
func (h *holder) end(ctx context.Context, l *lease.Lease, name string, succeeded bool) (lost error) {
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

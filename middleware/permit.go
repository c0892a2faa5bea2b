package middleware

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// held is what a request holds while its handler runs: the key's lease, or
// one of its permits (Config.Permits), which is a lease with a release of
// its own (it keeps the semaphore's held gauge).
type held interface {
	Context() context.Context
	Err() error
	Release(ctx context.Context) error
	ReleaseAsync(ctx context.Context)
}

// errSaturated marks a permit acquire that found every permit held, also
// after the wait: its refusal is PERMITS_SATURATED, not LEASE_CONTENDED,
// since no single holder is doing the request's work.
var errSaturated = errors.New("middleware: every permit of the key is held")

// semaphoreID names a route's semaphore on one key: its lock name (the
// permits' telemetry name) and the key.
type semaphoreID struct{ name, key string }

// acquirePermit takes one of the permits of key's semaphore through lk,
// name's Locker.
func (h *holder) acquirePermit(ctx context.Context, lk *lease.Locker, key, name string) (held, error) {
	sem, err := h.semaphore(lk, key, name)
	if err != nil {
		return nil, err
	}
	p, err := sem.Acquire(ctx)
	switch {
	case errors.Is(err, lease.ErrNotAcquired):
		return nil, fmt.Errorf("%w: %w", errSaturated, err)
	case err != nil:
		return nil, err
	}
	return p, nil
}

// semaphore is key's semaphore for name's requests, made once per name
// and key; past maxDerived of them, one per request (keys are request
// input, and the set they come from may not be small).
func (h *holder) semaphore(lk *lease.Locker, key, name string) (*permits.Semaphore, error) {
	id := semaphoreID{name: name, key: key}
	if s, ok := h.sems.Load(id); ok {
		return s.(*permits.Semaphore), nil
	}
	s, err := permits.New(lk, key, permits.Config{
		Limit: h.cfg.permits, Name: name, Wait: h.cfg.lease.Wait,
	})
	if err != nil {
		return nil, err
	}
	if h.semN.Load() < maxDerived {
		v, loaded := h.sems.LoadOrStore(id, s)
		if !loaded {
			h.semN.Add(1)
		}
		s = v.(*permits.Semaphore)
	}
	return s, nil
}

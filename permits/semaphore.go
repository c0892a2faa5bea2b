package permits

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/lockwatch/lockwatch/internal/leaseslot"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

// Semaphore is a key's permits as one caller sees them: at most its limit
// held at once across every process. It is safe for concurrent use; make
// one per key and keep it, as a Locker's With is made once.
type Semaphore struct {
	key     string
	cfg     Config
	fast    *lease.Locker // the permits' leases: the Locker with Name
	waiting *lease.Locker // fast, waiting as long as a wait's context lets it
	rec     *obs.Recorder
}

// New returns key's semaphore with cfg.Limit permits, whose permits are
// leases of lk (any Locker: New derives the ones it needs, sharing lk's
// scheduler, renewal and Close). New sends nothing.
func New(lk *lease.Locker, key string, cfg Config) (*Semaphore, error) {
	switch {
	case lk == nil:
		return nil, invalidf("nil Locker")
	case key == "":
		return nil, invalidf("empty key")
	}
	cfg, err := cfg.withDefaults(key)
	if err != nil {
		return nil, err
	}
	fast, err := lk.With(lease.Config{Name: cfg.Name})
	if err != nil {
		return nil, err
	}
	waiting, err := fast.With(lease.Config{Wait: math.MaxInt64})
	if err != nil {
		return nil, err
	}
	s := &Semaphore{key: key, cfg: cfg, fast: fast, waiting: waiting, rec: recorderOf(leaseslot.Telemetry(lk))}
	s.rec.PermitsLimit(context.Background(), cfg.Name, cfg.Limit)
	return s, nil
}

// Key returns the semaphore's key.
func (s *Semaphore) Key() string { return s.key }

// Limit returns how many permits the key has for this caller.
func (s *Semaphore) Limit() int { return s.cfg.Limit }

// Acquire takes one of the key's permits, or fails as lease.Locker.Acquire
// does:
//
//   - lease.ErrNotAcquired (*lease.NotAcquiredError for the key): every
//     permit is held, also after Config.Wait.
//   - lease.ErrUnknown: no permit was taken, and an attempt on one may
//     have taken effect; the Locker cleans it up behind the caller.
//   - any other error: nothing was taken (an invalid key, a closed
//     Locker, ctx over, Redis unreachable before anything was sent).
//
// It first reads which permits are free (one round trip) and tries them
// in random order; with a Wait and none free, it queues on every permit
// at once and takes the first granted (the package doc, "Acquiring"). The
// permit's context derives from ctx; Release it, always.
func (s *Semaphore) Acquire(ctx context.Context) (*Permit, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	ev := obs.PermitAcquire{Semaphore: s.cfg.Name, Start: time.Now()}
	p, err := s.tryFree(ctx, &ev)
	if p == nil && err == nil && s.cfg.Wait > 0 {
		p, err = s.wait(ctx, &ev)
	}
	if p == nil && err == nil {
		err = ev.Unknown
		if err == nil {
			err = &lease.NotAcquiredError{Key: s.key}
		}
	}
	s.observe(ctx, &ev, p, err)
	return p, err
}

// tryFree tries the permits that were free when read, in random order,
// each without waiting. It returns the first taken, or an error that ends
// the Acquire (neither contention nor an unknown attempt, which ev keeps),
// or neither: none was taken.
func (s *Semaphore) tryFree(ctx context.Context, ev *obs.PermitAcquire) (*Permit, error) {
	held, err := leaseslot.Held(s.fast, ctx, s.key, s.cfg.Limit)
	if err != nil {
		return nil, err
	}
	for _, i := range rand.Perm(len(held)) {
		if held[i] {
			continue
		}
		l, err := s.take(ctx, ctx, i, false)
		switch {
		case l != nil:
			return &Permit{Lease: l, Index: i, sem: s}, nil
		case errors.Is(err, lease.ErrUnknown):
			ev.Unknown = err
		case !errors.Is(err, lease.ErrNotAcquired):
			return nil, err
		}
	}
	return nil, nil
}

// take acquires permit i, queueing in its wait queue if queue is set.
func (s *Semaphore) take(ctx, wait context.Context, i int, queue bool) (*lease.Lease, error) {
	lk := s.fast
	if queue {
		lk = s.waiting
	}
	v, err := leaseslot.Acquire(lk, ctx, wait, leaseslot.Slot{Key: s.key, Index: i, Queue: queue})
	if v == nil {
		return nil, err
	}
	return v.(*lease.Lease), err
}

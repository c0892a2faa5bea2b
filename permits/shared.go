package permits

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/internal/leaseslot"
	"github.com/lockwatch/lockwatch/lease"
)

// Shared is a shared/exclusive lease on a key: at most Config.Limit
// readers at once, or one writer (the package doc, "Shared and exclusive
// leases"). It is safe for concurrent use; make one per key and keep it.
type Shared struct {
	sem    *Semaphore  // the readers' permits; a writer takes them all
	agreed atomic.Bool // the limit is the one recorded for the key

	mu       sync.Mutex
	readers  map[*Permit]struct{} // the process's readers, which yield to a writer
	watching chan struct{}        // closed to stop the watch; nil when none runs
}

// NewShared returns key's shared lease, whose readers hold one of
// cfg.Limit permits and whose writer holds key's own lease and every
// permit, all leases of lk. NewShared sends nothing.
func NewShared(lk *lease.Locker, key string, cfg Config) (*Shared, error) {
	sem, err := New(lk, key, cfg)
	if err != nil {
		return nil, err
	}
	return &Shared{sem: sem, readers: map[*Permit]struct{}{}}, nil
}

// Read takes a reader's permit, as Semaphore.Acquire takes a permit, and
// queues behind a writer that waits. While a writer holds the key, a
// reader's permit is not renewed: its context ends at its cancel point,
// before its key can expire, with a *lease.LostError of reason
// lease.LossYielded, and the writer takes the permit once the reader
// releases it or it expires.
func (s *Shared) Read(ctx context.Context) (*Permit, error) {
	if err := s.agree(ctx); err != nil {
		return nil, err
	}
	p, err := s.sem.Acquire(ctx)
	if p == nil {
		return nil, err
	}
	s.mu.Lock()
	s.readers[p] = struct{}{}
	if s.watching == nil {
		s.watching = make(chan struct{})
		go s.watch(s.watching)
	}
	s.mu.Unlock()
	context.AfterFunc(p.Context(), func() { s.forget(p) })
	return p, nil
}

// forget takes an ended reader off the list, and stops the watch after
// the last one.
func (s *Shared) forget(p *Permit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.readers, p)
	if len(s.readers) == 0 && s.watching != nil {
		close(s.watching)
		s.watching = nil
	}
}

// watch looks for a writer holding the key every leaseslot.Period while
// the process has readers, and makes them yield when one does. A look
// that fails changes nothing: the readers renew as before.
func (s *Shared) watch(stop <-chan struct{}) {
	t := time.NewTicker(leaseslot.Period(s.sem.fast))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), leaseslot.Period(s.sem.fast))
		held, err := leaseslot.Held(s.sem.fast, ctx, s.sem.key, 0)
		cancel()
		if err == nil && held[0] {
			s.yield()
		}
	}
}

// yield stops renewing every reader of the process.
func (s *Shared) yield() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.readers {
		leaseslot.Yield(p.Lease)
	}
}

// agree checks, once per Shared, that the key's record of its number of
// readers' permits is Config.Limit, and sets it if none is: a writer that
// covered fewer permits than a reader uses would write beside it. The
// record stays in Redis; to change the limit, stop every caller of the
// key and delete it (its name: the lease's lock with "r" for "l").
func (s *Shared) agree(ctx context.Context) error {
	if s.agreed.Load() {
		return nil
	}
	n, err := leaseslot.Agree(s.sem.fast, ctx, s.sem.key, s.sem.cfg.Limit)
	switch {
	case err != nil:
		return err
	case n != s.sem.cfg.Limit:
		return invalidf("shared lease %q has %d readers' permits in Redis, and this caller %d: every caller of a key gives the same Limit",
			s.sem.key, n, s.sem.cfg.Limit)
	}
	s.agreed.Store(true)
	return nil
}

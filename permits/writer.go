package permits

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lockwatch/lockwatch/internal/leaseslot"
	"github.com/lockwatch/lockwatch/lease"
)

// Write takes the writer's side of the key: first the key's own lease,
// whose fence is the writer's token (strictly increasing across writers,
// so a resource's mark under the key orders each writer's writes after
// every earlier writer's), then every reader's permit, queued behind the
// readers that hold them and ahead of every reader that comes later.
// With Config.Wait it waits for both, within the one bound; without, it
// fails fast. It fails as Semaphore.Acquire does, or with the
// *lease.LostError of a lease it lost while it waited for the others (a
// reader may hold that permit by then), and a writer that got part of
// what it needs releases it before returning.
//
// The writer's Permit has Index -1 and Key the key; its lease is the
// key's own, lost (context cancelled, Err and Commit refusing) as soon as
// any of the permits it holds is lost, and then renews none of them. Release
// releases them all.
func (s *Shared) Write(ctx context.Context) (*Permit, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if err := s.agree(ctx); err != nil {
		return nil, err
	}
	sem, queue := s.sem, s.sem.cfg.Wait > 0
	wctx, stop := ctx, context.CancelFunc(func() {})
	if queue {
		wctx, stop = context.WithTimeout(ctx, sem.cfg.Wait)
	}
	defer stop()
	v, err := leaseslot.Acquire(sem.waiting, ctx, wctx, leaseslot.Slot{Key: sem.key, Index: leaseslot.Exclusive, Queue: queue})
	if v == nil {
		return nil, timedOut(ctx, sem.key, err)
	}
	own := v.(*lease.Lease)
	slots, err := s.takeAll(ctx, wctx, queue)
	if err != nil {
		_ = own.Release(context.WithoutCancel(ctx))
		return nil, timedOut(ctx, sem.key, err)
	}
	if err := holdAll(own, slots); err != nil {
		_ = releaseAll(context.WithoutCancel(ctx), append(slots, own))
		return nil, err
	}
	p := &Permit{Lease: own, Index: leaseslot.Exclusive, slots: slots, sem: sem}
	p.ended.Store(true) // a writer is on no gauge or list of permits
	return p, nil
}

// holdAll ties the writer's leases together: a permit lost loses own,
// and own lost renews nothing more (what it holds expires unless it
// releases it first, and the next writer or the readers go on). A lease
// lost while the writer waited for the others fails the Write: the
// permit may be a reader's by now, so the writer never works.
func holdAll(own *lease.Lease, slots []*lease.Lease) error {
	for _, l := range slots {
		context.AfterFunc(l.Context(), func() { leaseslot.Lose(own, context.Cause(l.Context())) })
	}
	context.AfterFunc(own.Context(), func() {
		var lost *lease.LostError
		if errors.As(context.Cause(own.Context()), &lost) {
			for _, l := range slots {
				leaseslot.Yield(l)
			}
		}
	})
	for i, l := range append(slots, own) {
		if cause := context.Cause(l.Context()); cause != nil {
			leaseslot.Lose(own, cause)
			return fmt.Errorf("permits: the writer of %q lost %s while it waited: %w", own.Key(), leaseName(i, len(slots)), cause)
		}
	}
	return nil
}

// leaseName names a writer's i-th lease in an error: a permit, or the
// key's own lease after the n permits.
func leaseName(i, n int) string {
	if i == n {
		return "the key's own lease"
	}
	return fmt.Sprintf("permit %d", i)
}

// takeAll takes every reader's permit for a writer, each in its own
// queue, or none: what it got is released when one fails.
func (s *Shared) takeAll(ctx, wctx context.Context, queue bool) ([]*lease.Lease, error) {
	n := s.sem.cfg.Limit
	slots, errs := make([]*lease.Lease, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { slots[i], errs[i] = s.sem.take(ctx, wctx, i, queue) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err != nil {
		_ = releaseAll(context.WithoutCancel(ctx), slots) // what failed expires
		return nil, err
	}
	return slots, nil
}

// releaseAll releases leases (nil ones skipped) at once, each on its own
// goroutine, and says what failed.
func releaseAll(ctx context.Context, leases []*lease.Lease) error {
	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		if l != nil {
			wg.Go(func() { errs[i] = l.Release(ctx) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// timedOut is the error a writer's wait ends with: an unknown attempt's,
// or contention alone when the caller's context is live (the wait's own
// bound passed, or it did not wait), as a lease's Acquire says it, for
// the key and naming the replica of the holder that refused it (a writer,
// or a reader of the permit it last tried), else err.
func timedOut(ctx context.Context, key string, err error) error {
	var busy *lease.NotAcquiredError
	switch {
	case errors.Is(err, lease.ErrUnknown):
		return err
	case errors.As(err, &busy) && context.Cause(ctx) == nil:
		return &lease.NotAcquiredError{Key: key, HolderReplica: busy.HolderReplica}
	case errors.Is(err, lease.ErrNotAcquired) && context.Cause(ctx) == nil:
		return &lease.NotAcquiredError{Key: key}
	}
	return err
}

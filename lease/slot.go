package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/leaseslot"
	"github.com/lockwatch/lockwatch/telemetry"
)

func init() {
	leaseslot.Acquire = func(locker any, ctx, wait context.Context, slot leaseslot.Slot) (any, error) {
		l, err := locker.(*Locker).acquireSlot(ctx, wait, slot)
		if l == nil {
			return nil, err // a nil *Lease in an any is not nil
		}
		return l, err
	}
	leaseslot.Yield = func(l any) { l.(*Lease).locker.sched.yield(l.(*Lease)) }
	leaseslot.Lose = func(l any, cause error) {
		var lost *LostError
		if errors.As(cause, &lost) {
			l.(*Lease).locker.sched.lose(l.(*Lease), lost.Reason)
		}
	}
	leaseslot.Telemetry = func(locker any) *telemetry.Telemetry { return locker.(*Locker).cfg.Telemetry }
	leaseslot.Client = func(locker any) redis.UniversalClient { return locker.(*Locker).client }
	leaseslot.Namespace = func(locker any) string { return locker.(*Locker).set.Namespace }
	leaseslot.Agree = func(locker any, ctx context.Context, key string, limit int) (int, error) {
		return locker.(*Locker).agree(ctx, key, limit)
	}
	leaseslot.Period = func(locker any) time.Duration {
		set := locker.(*Locker).set
		return min(set.renewEvery, set.BackoffMax)
	}
	leaseslot.Held = func(locker any, ctx context.Context, key string, limit int) ([]bool, error) {
		return locker.(*Locker).heldSlots(ctx, key, limit)
	}
	leaseslot.KeyHash = func(l any) string { return hashTag(l.(*Lease).lockKey) }
}

// acquireSlot takes a semaphore's permit slot (leaseslot.Acquire), or with
// Index leaseslot.Exclusive the key's own lease: the attempts of Acquire on
// the slot's names, for the lease of the key leasekeys.SlotKey names. ev
// starts as waiting, so that no wait is recorded: the semaphore records its
// own, once per Acquire. Its calls go under ctx, not wait: a call in flight
// when another slot's grant ends the wait is answered, not abandoned as
// unknown. A slot taken without queueing through a Locker with a Wait gets
// the Locker's settings with none.
func (lk *Locker) acquireSlot(ctx, wait context.Context, slot leaseslot.Slot) (*Lease, error) {
	if slot.Key == "" || slot.Index < leaseslot.Exclusive {
		return nil, invalidf("permit %d of key %q", slot.Index, slot.Key)
	}
	set := lk.set
	if !slot.Queue && set.Wait > 0 {
		fast := *set
		fast.Wait = 0
		set = &fast
	}
	a := &acquisition{lk: lk, ctx: wait, parent: ctx, actx: ctx, set: set, key: slot.Key, keys: keysOf(set.Namespace, slot.Key)}
	if slot.Index != leaseslot.Exclusive {
		a.key, a.keys = leasekeys.SlotKey(slot.Key, slot.Index), leasekeys.OfSlot(set.Namespace, slot.Key, slot.Index)
	}
	l, _, err := a.run(&acquireEvent{waiting: true})
	if l != nil {
		set.rec.Activated(ctx, set.Name)
	}
	return l, err
}

// heldSlots says which of key's permit slots 0..limit-1 are held
// (leaseslot.Held).
func (lk *Locker) heldSlots(ctx context.Context, key string, limit int) ([]bool, error) {
	names := make([]string, limit)
	for i := range names {
		names[i] = leasekeys.OfSlot(lk.set.Namespace, key, i).Lock
	}
	if limit == 0 { // the key's own lock
		names = []string{keysOf(lk.set.Namespace, key).Lock}
	}
	ctx, cancel := context.WithTimeout(ctx, lk.set.AcquireTimeout)
	defer cancel()
	vals, err := lk.client.MGet(ctx, names...).Result()
	if err != nil {
		return nil, fmt.Errorf("lease: reading the permits of %q: %w", key, err)
	}
	held := make([]bool, len(names))
	for i, v := range vals {
		held[i] = v != nil
	}
	return held, nil
}

// yield stops renewing l (leaseslot.Yield): its cancel point stays where
// the last confirmed renewal put it, where it is lost with reason yielded,
// before its key can expire; a renewal in flight may still extend the key,
// never the cancel point. A reader of a shared lease makes way for a
// writer so: the writer takes the key once it expires or is released.
func (s *scheduler) yield(l *Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state(l.state.Load()) != stateActive || l.yielded {
		return
	}
	l.yielded = true
	l.maxHoldAt = time.Duration(l.cancelAt.Load())
	s.renewQ.remove(l)
}

// lose loses l at once with reason, as a rejected renewal would, and
// reports it: the Lose of leaseslot.
func (s *scheduler) lose(l *Lease, reason LossReason) {
	s.mu.Lock()
	newly := s.loseLocked(l, &LostError{Reason: reason}, clock.Now())
	s.mu.Unlock()
	if newly {
		s.lk.background(func() { reportLoss(l) })
	}
}

// agree records limit as key's shared lease's number of readers' permits
// unless one is (leaseslot.Agree), and returns the one recorded.
func (lk *Locker) agree(ctx context.Context, key string, limit int) (int, error) {
	name := leasekeys.Readers(lk.set.Namespace, key)
	ctx, cancel := context.WithTimeout(ctx, lk.set.AcquireTimeout)
	defer cancel()
	var get *redis.StringCmd
	_, err := lk.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, name, limit, 0)
		get = p.Get(ctx, name)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("lease: the readers of %q: %w", key, err)
	}
	n, err := get.Int()
	if err != nil {
		return 0, fmt.Errorf("lease: the readers of %q: record %q: %w", key, get.Val(), err)
	}
	return n, nil
}

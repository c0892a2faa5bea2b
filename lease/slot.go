package lease

import (
	"context"
	"fmt"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/leaseslot"
)

func init() {
	leaseslot.Acquire = func(locker any, ctx, wait context.Context, slot leaseslot.Slot) (any, error) {
		l, err := locker.(*Locker).acquireSlot(ctx, wait, slot)
		if l == nil {
			return nil, err // a nil *Lease in an any is not nil
		}
		return l, err
	}
	leaseslot.Held = func(locker any, ctx context.Context, key string, limit int) ([]bool, error) {
		return locker.(*Locker).heldSlots(ctx, key, limit)
	}
	leaseslot.KeyHash = func(l any) string { return hashTag(l.(*Lease).lockKey) }
}

// acquireSlot takes a semaphore's permit slot (leaseslot.Acquire): the
// attempts of Acquire on the slot's names, for the lease of the key
// leasekeys.SlotKey names. ev starts as waiting, so that no wait is
// recorded: the semaphore records its own, once per Acquire. A slot taken
// without queueing through a Locker with a Wait gets the Locker's settings
// with none.
func (lk *Locker) acquireSlot(ctx, wait context.Context, slot leaseslot.Slot) (*Lease, error) {
	if slot.Key == "" || slot.Index < 0 {
		return nil, invalidf("permit %d of key %q", slot.Index, slot.Key)
	}
	set := lk.set
	if !slot.Queue && set.Wait > 0 {
		fast := *set
		fast.Wait = 0
		set = &fast
	}
	a := &acquisition{
		lk: lk, ctx: wait, parent: ctx, actx: wait, set: set, key: leasekeys.SlotKey(slot.Key, slot.Index),
		keys: leasekeys.OfSlot(set.Namespace, slot.Key, slot.Index),
	}
	l, _, err := a.run(&acquireEvent{waiting: true})
	return l, err
}

// heldSlots says which of key's permit slots 0..limit-1 are held
// (leaseslot.Held).
func (lk *Locker) heldSlots(ctx context.Context, key string, limit int) ([]bool, error) {
	names := make([]string, limit)
	for i := range names {
		names[i] = leasekeys.OfSlot(lk.set.Namespace, key, i).Lock
	}
	ctx, cancel := context.WithTimeout(ctx, lk.set.AcquireTimeout)
	defer cancel()
	vals, err := lk.client.MGet(ctx, names...).Result()
	if err != nil {
		return nil, fmt.Errorf("lease: reading the permits of %q: %w", key, err)
	}
	held := make([]bool, limit)
	for i, v := range vals {
		held[i] = v != nil
	}
	return held, nil
}

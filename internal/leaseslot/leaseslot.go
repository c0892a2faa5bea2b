// Package leaseslot is the seam through which package permits reaches
// what package lease keeps unexported: the leases of a semaphore's permit
// slots, under the names leasekeys.OfSlot gives. Package lease sets the
// functions when it is initialised; permits is their only caller. Their
// values are a *lease.Locker and a *lease.Lease, typed any because this
// package cannot import lease, which imports it.
package leaseslot

import "context"

// Slot is one permit of a semaphore's key, and how to take it: Queue
// waits in the slot's queue for as long as the Locker's Config.Wait and
// the wait context allow, else the acquire fails fast.
type Slot struct {
	Key   string
	Index int
	Queue bool
}

// Acquire takes slot through locker, as Locker.Acquire takes a key, and
// records nothing of the acquire itself: the semaphore records its
// Acquire once, not once per slot it tries. wait ends a wait (the other
// slots' waits end when one slot is granted); the lease's context derives
// from ctx.
var Acquire func(locker any, ctx, wait context.Context, slot Slot) (any, error)

// Held reads the locks of slots 0..limit-1 of key's semaphore in one
// round trip (an MGET: the slots share a hash slot), and says which are
// held. A slot held by an expired owner is free in Redis, and so here.
var Held func(locker any, ctx context.Context, key string, limit int) ([]bool, error)

// KeyHash returns the hash of a slot lease's key (its names' hash tag,
// the semaphore key's): what spans, the Locker's snapshot and the debug
// page show instead of the raw key.
var KeyHash func(lease any) string

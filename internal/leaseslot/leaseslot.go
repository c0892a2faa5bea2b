// Package leaseslot is the seam through which packages permits and
// election reach what package lease keeps unexported: the leases of a
// semaphore's permit slots, under the names leasekeys.OfSlot gives, and a
// Locker's client, namespace and Telemetry. Package lease sets the
// functions when it is initialised. Their
// values are a *lease.Locker and a *lease.Lease, typed any because this
// package cannot import lease, which imports it.
package leaseslot

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/telemetry"
)

// Exclusive is the Index of a Slot that names the key's own lease, not
// one of its permits: a shared lease's writer takes it first.
const Exclusive = -1

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
// held; with limit 0, whether the key's own lease is. A lock whose TTL
// ran out is free in Redis, and so here.
var Held func(locker any, ctx context.Context, key string, limit int) ([]bool, error)

// Yield stops renewing lease (a *lease.Lease): it is lost with reason
// yielded at its cancel point, before its key can expire.
var Yield func(lease any)

// Lose loses lease (a *lease.Lease) at once with cause's reason (cause is
// a *lease.LostError: a writer's permit lost takes the writer's own lease
// with it, so that its Err and Commit tell).
var Lose func(lease any, cause error)

// Period is how often a shared lease's readers look for a writer:
// locker's renewal interval, or its BackoffMax if shorter.
var Period func(locker any) time.Duration

// KeyHash returns the hash of a slot lease's key (its names' hash tag,
// the semaphore key's): what spans, the Locker's snapshot and the debug
// page show instead of the raw key.
var KeyHash func(lease any) string

// Telemetry is locker's Telemetry (its Config's, or the one NewLocker
// made): a semaphore given none records where its Locker does.
var Telemetry func(locker any) *telemetry.Telemetry

// Client is the client locker was made with: an election writes its
// leader record there, beside the lease's keys.
var Client func(locker any) redis.UniversalClient

// Namespace is locker's lease.Config.Namespace, defaults in.
var Namespace func(locker any) string

// Agree records limit as the number of readers' permits of key's shared
// lease unless one is recorded (SETNX, then GET, in one pipeline: the
// record never changes once set), and returns the one recorded.
var Agree func(locker any, ctx context.Context, key string, limit int) (int, error)

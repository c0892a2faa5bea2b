// Package leaseadmin is the seam through which the lockwatch command reads
// and force-releases a lease by its Redis names rather than its key: a
// permit's (leasekeys.OfSlot), or one known only by the hash the debug page
// shows (leasekeys.OfHash). Package lease sets the functions when it is
// initialised; their values are a *lease.Locker and a lease.KeyInfo, typed
// any because this package cannot import lease, which imports it.
package leaseadmin

import (
	"context"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
)

// Target is a lease by its names. Key is what the KeyInfo's Key says, ""
// when only the hash is known.
type Target struct {
	Key   string
	Names leasekeys.Keys
}

// Inspect reads target through locker as lease.Locker.Inspect reads a
// key, and returns a lease.KeyInfo.
var Inspect func(locker any, ctx context.Context, target Target) (any, error)

// ForceRelease takes target from holder through locker as
// lease.Locker.ForceRelease takes a key, and returns a lease.KeyInfo.
var ForceRelease func(locker any, ctx context.Context, target Target, holder string) (any, error)

package permits

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

// Permit is one held permit: a lease of its own, with its own context
// (cancelled before its key can expire), renewal, fencing token and
// Commit, which the embedded Lease gives. Its Key is the permit's, Key(the
// semaphore's key, Index): the name its token is scoped to, under which a
// resource keeps the permit's mark.
type Permit struct {
	*lease.Lease
	// Index is the permit's number, 0 to the limit - 1; -1 for a shared
	// lease's writer (Shared.Write), whose Key is the key itself.
	Index int

	sem    *Semaphore
	ended  atomic.Bool    // off the held gauge: released or lost
	unlist func()         // takes it off the process's held permits
	slots  []*lease.Lease // a writer's: every reader's permit (Shared.Write)
}

// Key returns the key of permit index of key's semaphore, "<key>#<index>":
// its fencing domain. Each permit's tokens strictly increase, a permit's
// against another's mean nothing, so a resource that its holders write
// at once keeps a mark per permit, under this key (the package doc,
// "Fencing").
func Key(key string, index int) string { return leasekeys.SlotKey(key, index) }

// Release releases the permit as lease.Lease.Release does: the next
// waiter for it, if any, holds it when the release's script returns. A
// writer's releases the key's lease, then the readers' permits.
func (p *Permit) Release(ctx context.Context) error {
	p.finish(ctx)
	err := p.Lease.Release(ctx)
	return errors.Join(err, releaseAll(ctx, p.slots))
}

// ReleaseAsync releases the permit in the background, as
// lease.Lease.ReleaseAsync does.
func (p *Permit) ReleaseAsync(ctx context.Context) {
	p.finish(ctx)
	p.Lease.ReleaseAsync(ctx)
	for _, l := range p.slots {
		l.ReleaseAsync(ctx)
	}
}

// watch records the permit's loss when its context ends with one.
func (p *Permit) watch(ctx context.Context) {
	context.AfterFunc(p.Context(), func() {
		var lost *lease.LostError
		if cause := context.Cause(p.Context()); errors.As(cause, &lost) {
			p.end(context.WithoutCancel(ctx), obs.LossReason(lost.Reason), cause)
		}
	})
}

// finish ends a released permit: as lost if its context ended with a
// loss that watch's callback has not recorded yet, else as released.
func (p *Permit) finish(ctx context.Context) {
	var lost *lease.LostError
	if cause := context.Cause(p.Context()); errors.As(cause, &lost) {
		p.end(ctx, obs.LossReason(lost.Reason), cause)
		return
	}
	p.end(ctx, "", nil)
}

// end takes the permit off the held gauge and the process's held permits
// once, counting a loss.
func (p *Permit) end(ctx context.Context, reason obs.LossReason, err error) {
	if p.ended.CompareAndSwap(false, true) {
		p.unlist()
		p.sem.rec.PermitEnded(ctx, p.sem.cfg.Name, reason, err)
	}
}

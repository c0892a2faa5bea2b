package lease

import (
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"

	"context"
	"fmt"
)

// Commit runs fn, the final write of the protected work, with the lease's
// fencing token, but only if the lease is active and the validity left is
// above the hard margin (WithCommitMargins). Otherwise it refuses: with the
// loss (errors.Is ErrLost) after a loss, ErrReleased after Release, and
// ErrExpiring below the hard margin. A commit that runs below the warning
// threshold is reported as near_expiry.
//
// fn gets ctx unchanged: Commit does not cancel it when the lease is lost
// meanwhile, because a half-done final write is worse than a finished one
// that the resource's fence can reject. Pass the fence to the resource: it
// is what makes a late write harmless, since a lease can be lost between
// this check and the write (a pause, a stall) and no client-side check can
// close that gap.
func (l *Lease) Commit(ctx context.Context, fn func(ctx context.Context, token fence.Token) error) error {
	rem := l.Remaining()
	ev := commitEvent{Name: l.set.name, Key: l.key, Fence: l.fence, Remaining: rem, Result: obs.CommitCommitted}
	switch err := l.Err(); {
	case err != nil:
		ev.Result, ev.Err = obs.CommitRefused, err
	case rem <= l.set.commitHard: // rem is 0 past the cancel point, even before the scheduler marks the loss
		ev.Result, ev.Err = obs.CommitRefused, fmt.Errorf("%w: %v left, hard margin %v", ErrExpiring, rem, l.set.commitHard)
	case rem < l.set.commitWarn:
		ev.Result = obs.CommitNearExpiry
	}
	l.set.observeCommit(ctx, ev)
	if ev.Err != nil {
		return ev.Err
	}
	return fn(ctx, l.fence)
}

package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Commit runs fn, the final write of the protected work, with the lease's
// fencing token, but only if the lease is active and the validity left is
// above the hard margin (Config.CommitHard). Otherwise it refuses: with the
// loss (errors.Is ErrLost) after a loss, ErrReleased after Release, and
// ErrExpiring below the hard margin. It returns fn's error as it is.
//
// fn runs on ctx's values (its span, a fencing token, ...) without ctx's
// cancellation or deadline, bounded by Config.CommitTimeout (default 30s)
// only; a caller that wants a shorter bound for one write sets it inside
// fn. Neither the lease's loss nor the caller's cancellation cuts the
// write: a lease can be lost between the check and the write, and only the
// resource's fence closes that gap, if the write reaches it to be rejected
// and counted (cancellation is not rollback). Pass the token to the
// resource.
//
// Each call is counted once in lockwatch_lease_commits_total, when fn has
// returned: committed, near_expiry (written below the warning threshold),
// refused (fn did not run), stale (fn's error is a fence rejection,
// errors.Is fence.ErrStale) or failed (any other error, or a panic).
func (l *Lease) Commit(ctx context.Context, fn func(ctx context.Context, token fence.Token) error) error {
	if l == nil {
		return errNoLease // FromContext outside the middleware: nothing to count it under
	}
	rem := l.Remaining()
	ev := obs.Commit{Lock: l.set.Name, Result: obs.CommitCommitted, Remaining: rem, Fence: l.token.Fence}
	var refused error
	switch err := l.Err(); {
	case err != nil:
		ev.Result, refused = obs.CommitRefused, err
	case rem <= l.set.CommitHard: // rem is 0 past the cancel point, even before the scheduler marks the loss
		ev.Result, refused = obs.CommitRefused, fmt.Errorf("%w: %v left, hard margin %v", ErrExpiring, rem, l.set.CommitHard)
	case rem < l.set.CommitWarn:
		ev.Result = obs.CommitNearExpiry
	}
	if refused != nil {
		l.set.rec.Committed(ctx, ev)
		return refused
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.set.CommitTimeout)
	defer cancel()
	returned := false
	defer func() {
		if !returned { // fn panicked: counted, and the panic goes on
			ev.Result = obs.CommitFailed
			l.set.rec.Committed(ctx, ev)
		}
	}()
	err := fn(wctx, l.token)
	returned = true
	switch {
	case err == nil:
	case errors.Is(err, fence.ErrStale):
		ev.Result = obs.CommitStale
	default:
		ev.Result = obs.CommitFailed
	}
	l.set.rec.Committed(ctx, ev)
	return err
}

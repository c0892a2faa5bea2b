package lease

import (
	"context"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/script"
)

// renew sends one batch of renewals (leases with one renewal timeout, see
// chunks) in a pipeline whose deadline is send + that timeout. Not the
// earliest cancel point in the batch: one lease close to its own (an
// acquire whose reply came late) would turn every healthy neighbour's
// renewal unknown. The scheduler ends that lease at its cancel point
// whether its reply is in or not, and a reply that comes later does not
// count for it (renewed).
func (lk *Locker) renew(batch []*Lease) {
	sentAt := clock.Now()
	deadline := sentAt + batch[0].set.RenewalTimeout
	calls := make([]script.Call, len(batch))
	for i, l := range batch {
		calls[i] = l.renew
	}
	ctx, cancel := context.WithDeadline(context.Background(), clock.WallTime(deadline))
	cmds := script.RunPipelined(ctx, lk.client, calls)
	cancel()
	rtt := clock.Now() - sentAt

	results := make([]obs.RenewalResult, len(batch))
	errs := make([]error, len(batch))
	var forced []bool // renew.lua's -1: rejected, because an administrator took the key
	for i, cmd := range cmds {
		n, err := cmd.Int64()
		switch {
		case err != nil:
			results[i], errs[i] = obs.RenewalUnknown, err
		case n == 1:
			results[i] = obs.RenewalRenewed
		default:
			results[i] = obs.RenewalRejected
			if n == -1 {
				if forced == nil {
					forced = make([]bool, len(batch))
				}
				forced[i] = true
			}
		}
	}
	lost := lk.sched.renewed(batch, sentAt, results, errs, forced) // cancels the lost at once
	for i, l := range batch {                                      // the renewal first: it is the loss's cause
		if results[i] != "" {
			l.set.rec.Renewal(l.ctx, obs.Renewal{Lock: l.set.Name, Result: results[i], Duration: rtt, Fence: l.token.Fence,
				Err: errs[i]})
		}
	}
	for _, l := range lost {
		reportLoss(l)
	}
}

package lease

import (
	"context"
	"time"
)

// renew sends one batch of renewals (leases with one renewal timeout) in a
// pipeline. Its deadline is send + renewal timeout, or the earliest cancel
// point in the batch if sooner: a reply after that could not count anyway.
func (lk *Locker) renew(batch []*Lease) {
	sentAt := now()
	deadline := sentAt + time.Hour
	calls := make([]scriptCall, len(batch))
	for i, l := range batch {
		deadline = min(deadline, sentAt+l.set.renewalTimeout, time.Duration(l.cancelAt.Load()))
		calls[i] = l.renew
	}
	ctx, cancel := context.WithDeadline(context.Background(), wallTime(deadline))
	cmds := runPipelined(ctx, lk.client, calls)
	cancel()
	rtt := now() - sentAt

	results := make([]RenewalResult, len(batch))
	errs := make([]error, len(batch))
	for i, cmd := range cmds {
		n, err := cmd.Int64()
		switch {
		case err != nil:
			results[i], errs[i] = RenewalUnknown, err
		case n == 1:
			results[i] = Renewed
		default:
			results[i] = RenewalRejected
		}
	}
	lost := lk.sched.renewed(batch, sentAt, results, errs) // cancels the lost at once
	for i, l := range batch {                              // the renewal first: it is the loss's cause
		if results[i] != "" {
			l.set.observeRenewal(l.ctx, RenewalEvent{Name: l.set.name, Key: l.key, Fence: l.fence, Result: results[i],
				Duration: rtt, BatchSize: len(batch), Err: errs[i]})
		}
	}
	for _, l := range lost {
		reportLoss(l)
	}
}

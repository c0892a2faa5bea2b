package main

import (
	"context"
	"errors"
	"time"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
)

// stuckJob is the job's leader stuck in a write, its term still renewed:
// what an operator force-releases.
type stuckJob struct {
	replica *replica
	term    election.Term
	ctx     context.Context // the term's
	done    chan struct{}   // closed when the operator is done: the write goes on
}

// forceRelease is the force-release fault, an operator's intervention in
// four steps. The job's leader gets stuck in a write (job.write arms it);
// the operator notices, and takes the election's key back with
// Locker.ForceRelease, as lockwatch release --force does
// (lockwatch_lease_force_releases_total). The key goes to the oldest
// candidate in its queue, elected at once with a newer term, which writes
// the ledger. The stuck leader's next renewal is rejected: it loses its
// term (force_released). When its write goes on, it carries the old term's
// token, and the ledger rejects it: a force release is safe only because
// of the fence.
func (d *demo) forceRelease(ctx context.Context) {
	var s stuckJob
	select {
	case s = <-d.stuck:
	case <-d.stop:
		return // a compaction stuck meanwhile goes on at the stop
	}
	defer close(s.done)
	r, t := s.replica, s.term
	d.out.event("stuck", "%s, the job's leader, hangs in a write, holding %s in term %d", r.name, jobKey, t.Fence)
	if !d.sleep(d.ttls(forceNoticeTTLs)) {
		return
	}
	info, err := d.forceOnce(ctx)
	for try := 1; try < 3 && err != nil && !errors.Is(err, lease.ErrNotHeld); try++ {
		info, err = d.forceOnce(ctx) // Redis did not answer in time: the operator tries again
	}
	switch {
	case errors.Is(err, lease.ErrNotHeld):
		d.out.event("force", "operator: lockwatch release --force %s: the stuck holder no longer holds it", jobKey)
		return
	case err != nil:
		d.out.event("force", "operator: lockwatch release --force %s: %v", jobKey, err)
		return
	}
	d.out.event("force", "operator: lockwatch release --force %s (holder %s, fence %d): the key goes to the next candidate", jobKey, info.Holder, info.Fence)

	timer := time.NewTimer(d.ttls(2))
	defer timer.Stop()
	select {
	case <-s.ctx.Done():
		var lost *lease.LostError
		if errors.As(context.Cause(s.ctx), &lost) {
			d.out.event("lost", "%s loses term %d at its next renewal (%s): its context is cancelled, its write already under way", r.name, t.Fence, lost.Reason)
		}
	case <-timer.C:
	case <-d.stop:
		return
	}
	// Let the successor write first, or give up waiting.
	deadline := time.Now().Add(d.ttls(forceStuckTTLs))
	for d.ledgerSrv.fenceOf(jobKey) <= t.Fence && time.Now().Before(deadline) {
		if !d.sleep(d.cfg.ttl / 10) {
			return
		}
	}
}

// forceOnce does what lockwatch release --force does: look, then take
// the key from the holder seen, and from no other.
func (d *demo) forceOnce(ctx context.Context) (lease.KeyInfo, error) {
	seen, err := d.operator.Inspect(ctx, jobKey)
	if err == nil && !seen.Held {
		err = lease.ErrNotHeld
	}
	if err != nil {
		return lease.KeyInfo{}, err
	}
	return d.operator.ForceRelease(ctx, jobKey, seen.Holder)
}

// sleep waits d, or until the demo stops; it reports whether d passed.
func (d *demo) sleep(dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.stop:
		return false
	}
}

// stuckWrite is the leader's write the force-release fault struck: it
// hands itself to the operator, waits until the operator is done, then
// writes with its term's token.
func (j *job) stuckWrite(ctx context.Context, t election.Term, write func() error) error {
	d := j.r.d
	done := make(chan struct{})
	select {
	case d.stuck <- stuckJob{replica: j.r, term: t, ctx: ctx, done: done}:
		select {
		case <-done:
		case <-d.stop:
		}
	case <-d.stop:
	}
	err := write()
	d.lateOutcome(j.r.name+"'s stuck write goes on, writes "+jobKey, j.r.name+"'s stuck write to "+jobKey, t.Fence, err)
	return err
}

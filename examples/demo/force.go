package main

import (
	"context"
	"errors"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// stuckJob is a compaction stuck in its final write, after Commit's check:
// what an operator force-releases.
type stuckJob struct {
	replica *replica
	lease   *lease.Lease
	done    chan struct{} // closed when the operator is done: the write goes on
}

// forceRelease is the force-release fault, an operator's intervention in
// four steps. A compaction gets stuck in its final write (job.compact
// arms it); the operator notices, and takes the key back with
// Locker.ForceRelease, as lockwatch release --force does
// (lockwatch_lease_force_releases_total). The holder's next renewal is
// rejected: it loses its lease (force_released). The other replica, which
// was waiting for the key, is woken and takes it with a newer fence, and
// writes. When the stuck compaction goes on, its write carries the old
// fence, and the ledger rejects it: a force release is safe only because
// of the fence.
func (d *demo) forceRelease(ctx context.Context) {
	var s stuckJob
	select {
	case s = <-d.stuck:
	case <-d.stop:
		return // a compaction stuck meanwhile goes on at the stop
	}
	defer close(s.done)
	r, l := s.replica, s.lease
	d.out.event("stuck", "%s: the compaction hangs in its final write, holding %s with fence %d", r.name, jobKey, l.Fence())
	if !d.sleep(d.ttls(forceNoticeTTLs)) {
		return
	}
	// As lockwatch release --force does: look, then take the key from the
	// holder seen, and from no other.
	seen, err := d.operator.Inspect(ctx, jobKey)
	if err == nil && !seen.Held {
		err = lease.ErrNotHeld
	}
	var info lease.KeyInfo
	if err == nil {
		info, err = d.operator.ForceRelease(ctx, jobKey, seen.Holder)
	}
	switch {
	case errors.Is(err, lease.ErrNotHeld):
		d.out.event("force", "operator: lockwatch release --force %s: the stuck holder no longer holds it", jobKey)
		return
	case err != nil:
		d.out.event("force", "operator: lockwatch release --force %s: %v", jobKey, err)
		return
	}
	d.out.event("force", "operator: lockwatch release --force %s (holder %s, fence %d): the key is free", jobKey, info.Holder, info.Fence)
	d.forceSuccessor.Store(true)

	t := time.NewTimer(d.ttls(2))
	defer t.Stop()
	select {
	case <-l.Context().Done():
		var lost *lease.LostError
		if errors.As(l.Err(), &lost) {
			d.out.event("lost", "%s loses %s at its next renewal (%s): its context is cancelled, its write already under way", r.name, jobKey, lost.Reason)
		}
	case <-t.C:
	case <-d.stop:
		return
	}
	// Let the successor write first, or give up waiting.
	deadline := time.Now().Add(d.ttls(forceStuckTTLs))
	for d.ledgerSrv.fenceOf(jobKey) <= int64(l.Fence()) && time.Now().Before(deadline) {
		if !d.sleep(d.cfg.ttl / 10) {
			return
		}
	}
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

// stuckWrite is the final write of a compaction the force-release fault
// struck: it hands itself to the operator, waits until the operator is
// done, then writes with its old token.
func (j *job) stuckWrite(ctx context.Context, l *lease.Lease, token fence.Token, write func(context.Context) error) error {
	d := j.r.d
	done := make(chan struct{})
	select {
	case d.stuck <- stuckJob{replica: j.r, lease: l, done: done}:
		select {
		case <-done:
		case <-d.stop:
		}
	case <-d.stop:
	}
	err := write(ctx)
	d.lateOutcome(j.r.name+"'s stuck compaction goes on, writes", j.r.name+"'s stuck compaction goes on; its write", token.Fence, err)
	return err
}

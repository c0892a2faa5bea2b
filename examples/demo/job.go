package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// jobKey is the lock key of the background job, and its ledger key.
const jobKey = "job:compaction"

// job is a replica's background job, the other way services use leases:
// every replica tries to run the ledger's compaction, one at a time, for a
// few TTLs under the lease on job:compaction (lock name "compaction"). It
// is the demo's long-held lease, renewed every TTL/3: a stall of its
// replica's Redis connection fails a renewal and takes it away
// (renewal_unknown), a pause lets it run out (deadline), and the other
// replica takes over. The replica that does not hold it waits for it
// (lease.WithWait, jobWaitTTLs at a time): its waits end acquired when the
// holder releases during one, timed_out otherwise, and show on the wait
// signals (lockwatch_lease_waiting, lockwatch_lease_wait_duration_seconds).
type job struct {
	r       *replica
	holding atomic.Bool // the replica holds the job's lease
	runs    int
}

// jobMaxHoldTTLs bounds a compaction's hold time.
const jobMaxHoldTTLs = 6

// jobWaitTTLs bounds one wait for the job's lease: shorter than a
// compaction (3 to 5 TTLs), so that a wait may end either way.
const jobWaitTTLs = 2

func (j *job) run(ctx context.Context) {
	ttl := j.r.d.cfg.ttl
	for ctx.Err() == nil {
		l, err := j.r.locker.Acquire(ctx, jobKey, lease.WithName("compaction"), lease.WithMaxHold(j.r.d.ttls(jobMaxHoldTTLs)),
			lease.WithWait(j.r.d.ttls(jobWaitTTLs)))
		switch {
		case errors.Is(err, lease.ErrNotAcquired):
			// Waited in vain: wait again, as a job scheduler would.
		case err != nil:
			j.r.wait(ctx, ttl/4) // unknown: the clean-up frees the key
		default:
			j.holding.Store(true)
			j.compact(ctx, l)
			j.holding.Store(false)
			_ = l.Release(ctx)
			j.r.wait(ctx, jitter(ttl/4, ttl/2))
		}
	}
}

// compact works for a few TTLs on the lease's context, then records the
// compaction in the ledger with the lease's token. With the near-expiry
// fault, every other run uses up its whole max hold first and commits with
// less validity left than Commit's warning threshold: a batch job that
// spends its time budget to the end.
func (j *job) compact(ctx context.Context, l *lease.Lease) {
	r := j.r
	j.runs++
	var err error
	if r.d.cfg.faults.on(faultNearExpiry) && j.runs%2 == 0 {
		err = waitRemaining(l.Context(), l, r.d.commitWarn()*2/3)
	} else {
		err = r.work(l.Context(), jitter(r.d.ttls(3), r.d.ttls(5)), r.slowCancel())
	}
	if err != nil {
		return // lost (or the demo is stopping): stop, write nothing
	}
	_ = l.Commit(context.WithoutCancel(ctx), func(ctx context.Context, token fence.Token) error {
		return r.d.ledger.put(ctx, jobKey, fmt.Sprintf("compacted@%d", token))
	})
}

// wait sleeps d, or until ctx is done.
func (r *replica) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

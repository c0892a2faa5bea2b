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
// (lease.Config.Wait, jobWaitTTLs at a time): its waits end acquired when
// the holder releases during one, timed_out otherwise, and show on the wait
// signals (lockwatch_lease_waiting, lockwatch_lease_wait_duration_seconds).
type job struct {
	r       *replica
	locker  *lease.Locker // the replica's, named compaction, with the job's max hold and wait
	holding atomic.Bool   // the replica holds the job's lease
	spared  atomic.Bool   // its compaction is the force-release fault's: no stall
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
		l, err := j.locker.Acquire(ctx, jobKey)
		switch {
		case errors.Is(err, lease.ErrNotAcquired):
			// Waited in vain: wait again, as a job scheduler would.
		case err != nil:
			j.r.wait(ctx, ttl/4) // unknown: the clean-up frees the key
		default:
			j.holding.Store(true)
			j.compact(l)
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
// spends its time budget to the end. With the force-release fault, a
// compaction now and then hangs in its final write until an operator
// force-releases its key (see demo.forceRelease).
func (j *job) compact(l *lease.Lease) {
	r := j.r
	j.runs++
	var err error
	stuck := false
	// The first compaction after a force release is the stuck one's
	// successor: it runs short and is spared the stalls, so that it writes
	// before the stuck one goes on.
	successor := r.d.forceSuccessor.CompareAndSwap(true, false)
	switch {
	case successor:
		j.spared.Store(true)
		defer j.spared.Store(false)
		err = r.work(l.Context(), jitter(r.d.ttls(0.5), r.d.ttls(1)), false)
	case r.d.cfg.faults.on(faultNearExpiry) && j.runs%2 == 0:
		err = waitRemaining(l.Context(), l, r.d.commitWarn()*2/3)
	default:
		// The force-release fault strikes a compaction that is renewed
		// (not one at the end of its max hold), so that the force release
		// is what ends its lease. The stalls spare it, and it hangs early.
		work := jitter(r.d.ttls(3), r.d.ttls(5))
		if stuck = r.d.forceArmed.CompareAndSwap(true, false); stuck {
			j.spared.Store(true)
			defer j.spared.Store(false)
			work = jitter(r.d.ttls(1), r.d.ttls(2))
		}
		err = r.work(l.Context(), work, r.slowCancel())
	}
	if err != nil {
		if stuck {
			r.d.forceArmed.Store(true) // lost first: the next compaction gets stuck instead
		}
		return // lost (or the demo is stopping): stop, write nothing
	}
	wrote := false
	// On the lease's context, which carries the token that
	// middleware.RoundTripper sends to the ledger; Commit removes its
	// cancellation.
	err = l.Commit(l.Context(), func(ctx context.Context, token fence.Token) error {
		wrote = true
		write := func(ctx context.Context) error {
			return r.d.ledger.put(ctx, jobKey, fmt.Sprintf("compacted@%d", token.Fence))
		}
		if stuck {
			return j.stuckWrite(ctx, l, token, write)
		}
		return write(ctx)
	})
	switch {
	case stuck && !wrote:
		r.d.forceArmed.Store(true) // Commit refused: the next compaction gets stuck instead
	case successor && err == nil:
		r.d.out.event("takeover", "%s takes %s with fence %d and writes it", r.name, jobKey, l.Fence())
	}
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

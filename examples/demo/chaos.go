package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/fence"
)

// Fault rates and timings, in TTLs where they are times: -ttl scales the
// whole demo.
const (
	lossRate        = 0.01 // share of lease commands whose reply is lost
	slowCancelShare = 0.3  // share of handlers slow to stop after a loss

	maxHoldTTLs      = 1.5 // reports hold their lease at most this long
	stallTTLs        = 0.8 // a stall of a replica's Redis connection
	firstStallTTLs   = 1.5
	stallEveryTTLs   = 4.0
	pauseTTLs        = 2.5 // a replica's pause: long enough for its leases to expire and be taken
	firstPauseTTLs   = 3.0
	pauseEveryTTLs   = 7.0
	firstOverrunTTLs = 1.0 // a report that overruns its max hold
	overrunEveryTTLs = 5.0
	firstExpiryTTLs  = 0.5 // a report that commits near expiry, or too late
	expiryEveryTTLs  = 2.5
	firstForceTTLs   = 2.0 // the job's leader gets stuck in a write, and the operator's force release
	forceEveryTTLs   = 9.0
	forceNoticeTTLs  = 0.25 // how long the operator takes to notice a stuck leader
	forceStuckTTLs   = 8.0  // how long a stuck write waits for its successor's write, at most
	firstKillTTLs    = 5.0  // the job's leader is killed
	killEveryTTLs    = 11.0
	killDownTTLs     = 2.0 // how long a killed job's process stays down
	killWaitTTLs     = 4.0 // how long a kill waits for a leader to kill, at most
	reportWaitTTLs   = 0.1 // how long a report waits for another's on its account
	exportWaitTTLs   = 0.1 // how long an export waits for one of the permits
	leaderPauseTTLs  = 6.0 // how long a pause waits for the job leader's next write, at most
)

func (d *demo) ttls(n float64) time.Duration { return time.Duration(n * float64(d.cfg.ttl)) }

func (d *demo) maxHold() time.Duration    { return d.ttls(maxHoldTTLs) }
func (d *demo) commitHard() time.Duration { return d.cfg.ttl / 20 }
func (d *demo) commitWarn() time.Duration { return d.cfg.ttl / 4 }

// commitTimeout bounds a final write: above lease's default when the TTL
// is long, so that a write the faults hold back (a pause, a stuck
// leader's write, up to forceStuckTTLs) still reaches the ledger's fence
// rather than end at the timeout, unseen by the fence.
func (d *demo) commitTimeout() time.Duration { return max(30*time.Second, d.ttls(2*forceStuckTTLs)) }

// chaos injects the scheduled faults until stop: stalls of one replica's
// Redis connection, pauses of one replica or of the job's leader, reports
// that overrun, job leaders stuck until an operator force-releases their
// key, and kills of the job's leader.
func (d *demo) chaos(ctx context.Context) {
	var pauses sync.WaitGroup
	defer pauses.Wait()
	start := time.Now()
	type schedule struct {
		on    bool
		next  time.Time
		every float64
		n     int
		fire  func(n int)
	}
	schedules := []*schedule{
		{on: d.cfg.faults.on(faultRedisStall), next: start.Add(d.ttls(firstStallTTLs)), every: stallEveryTTLs, fire: d.stall},
		{on: d.cfg.faults.on(faultPause), next: start.Add(d.ttls(firstPauseTTLs)), every: pauseEveryTTLs, fire: func(n int) {
			// Every other pause strikes the job's leader in a write.
			// Take turns with the stalls, so that a pause and a stall
			// rarely hit the same replica at once.
			if n%2 == 1 {
				pauses.Go(d.pauseLeader)
				return
			}
			r := d.replicas[(n+1)%len(d.replicas)]
			pauses.Go(func() { d.pause(ctx, r) })
		}},
		{on: d.cfg.faults.on(faultOverrun), next: start.Add(d.ttls(firstOverrunTTLs)), every: overrunEveryTTLs, fire: func(int) {
			d.overrunArmed.Store(true) // the next report overruns
		}},
		{on: d.cfg.faults.on(faultNearExpiry), next: start.Add(d.ttls(firstExpiryTTLs)), every: expiryEveryTTLs, fire: func(n int) {
			mode := reportNearExpiry // the next report commits near expiry; every other time, too late
			if n%2 == 1 {
				mode = reportTooLate
			}
			d.expiryArmed.Store(int32(mode))
		}},
		{on: d.cfg.faults.on(faultForce), next: start.Add(d.ttls(firstForceTTLs)), every: forceEveryTTLs, fire: func(int) {
			if d.forceArmed.CompareAndSwap(false, true) { // the leader's next write gets stuck
				pauses.Go(func() { d.forceRelease(ctx) })
			}
		}},
		{on: d.cfg.faults.on(faultKill), next: start.Add(d.ttls(firstKillTTLs)), every: killEveryTTLs, fire: func(int) {
			pauses.Go(d.kill)
		}},
	}
	for {
		next := start.Add(time.Hour)
		for _, s := range schedules {
			if s.on && s.next.Before(next) {
				next = s.next
			}
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-t.C:
		case <-d.stop:
			t.Stop()
			return
		}
		now := time.Now()
		for _, s := range schedules {
			if s.on && !now.Before(s.next) {
				s.fire(s.n)
				s.n++
				s.next = now.Add(jitter(d.ttls(s.every-0.5), d.ttls(s.every+0.5)))
			}
		}
	}
}

// stall stalls the Redis connections of a replica (its servers' and its
// job's) for a while: the job leader's, whose term's renewals are then sure
// to fail, or else the next in turn; never a leader in a write, which a
// pause or an operator may be about to end, nor while a leader is paused,
// whose successor is to be elected and write before it resumes.
func (d *demo) stall(n int) {
	if d.leaderPaused.Load() {
		return // the next leader is to be elected and write in time
	}
	r := d.replicas[n%len(d.replicas)]
	leader := d.leader()
	if leader != nil {
		r = leader
	}
	if r.job.spared.Load() {
		if len(d.replicas) == 1 {
			return
		}
		r = d.replicas[(n+1)%len(d.replicas)]
	}
	r.faults.stall(d.ttls(stallTTLs))
	r.job.faults.stall(d.ttls(stallTTLs))
	if t, ok := r.job.elect.Leading(); ok {
		d.out.event("stall", "%s, the job's leader in term %d: Redis connection stalls for %v (renewals fail)", r.name, t.Fence, d.ttls(stallTTLs))
		return
	}
	d.out.event("stall", "%s: Redis connection stalls for %v (acquires time out, renewals fail)", r.name, d.ttls(stallTTLs))
}

// leader is the replica whose job leads, nil when none does.
func (d *demo) leader() *replica {
	for _, r := range d.replicas {
		if _, ok := r.job.elect.Leading(); ok {
			return r
		}
	}
	return nil
}

// kill kills the job leader's process, once there is a leader that is
// not in a write (which other faults may hold), waiting up to
// killWaitTTLs for one: its term is never resigned, and the next
// candidate is elected once the key expires. It restarts after
// killDownTTLs.
func (d *demo) kill() {
	var r *replica
	var t election.Term
	for deadline := time.Now().Add(d.ttls(killWaitTTLs)); ; {
		if r = d.leader(); r != nil && !r.job.spared.Load() {
			var ok bool
			if t, ok = r.job.elect.Leading(); ok {
				break
			}
		}
		if time.Now().After(deadline) || !d.sleep(d.cfg.ttl/20) {
			return
		}
	}
	d.out.event("kill", "%s, the job's leader in term %d, is killed: nothing resigns its term, whose key is left to expire", r.name, t.Fence)
	r.job.killNow()
}

// pause stops replica r for a while, like a stop-the-world GC pause or a
// frozen VM: its handlers and its Redis traffic stand still, while time goes
// on. The pause strikes a deposit in its final write (see
// replica.maybePause), or after TTL/2 anything that is running. Meanwhile
// another replica takes the paused deposit's account and writes it; when r
// resumes, its deposit writes with a fence older than the one the ledger
// has accepted, and the ledger rejects it.
func (d *demo) pause(ctx context.Context, r *replica) {
	r.pauseArmed.Store(true)
	var v victim
	t := time.NewTimer(d.cfg.ttl / 2)
	select {
	case v = <-r.victims:
	case <-t.C:
		if r.pauseArmed.CompareAndSwap(true, false) {
			v = victim{replica: r, resume: r.gate.pause()}
		} else {
			v = <-r.victims
		}
	case <-d.stop:
		if r.pauseArmed.CompareAndSwap(true, false) {
			return
		}
		(<-r.victims).resume()
		return
	}
	t.Stop()
	defer v.resume()
	until := time.Now().Add(d.ttls(pauseTTLs))
	if v.account == "" {
		d.out.event("pause", "%s stops for %v (a stop-the-world pause)", r.name, d.ttls(pauseTTLs))
	} else {
		d.out.event("pause", "%s stops for %v while writing %s with fence %d",
			r.name, d.ttls(pauseTTLs), v.account, v.fence)
		if other := d.otherThan(r); other >= 0 {
			d.takeOver(ctx, other, v, until)
		}
	}
	t = time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.stop:
	}
}

// pauseLeader stops the job leader's replica in its next write, for
// pauseTTLs: the term's renewals stop, its context is cancelled at its
// cancel point, its key expires and the next candidate is elected, whose
// first write moves the ledger's fence to the new term; when the paused
// write arrives with the old term's token, the ledger rejects it.
func (d *demo) pauseLeader() {
	d.leaderPauseArmed.Store(true)
	t := time.NewTimer(d.ttls(leaderPauseTTLs))
	defer t.Stop()
	var v victim
	select {
	case v = <-d.leaderVictims:
	case <-t.C:
		if d.leaderPauseArmed.CompareAndSwap(true, false) {
			return // no leader wrote meanwhile
		}
		v = <-d.leaderVictims
	case <-d.stop:
		if !d.leaderPauseArmed.CompareAndSwap(true, false) {
			(<-d.leaderVictims).resume()
		}
		return
	}
	d.leaderPaused.Store(true)
	defer d.leaderPaused.Store(false)
	defer v.resume()
	d.out.event("pause", "%s, the job's leader, stops for %v while writing %s with term %d's token",
		v.replica.name, d.ttls(pauseTTLs), v.account, v.fence)
	d.sleep(d.ttls(pauseTTLs))
}

// takeOver deposits to v's account on replica i until the deposit goes
// through: once v's lease has expired in Redis, it gets a newer fence.
func (d *demo) takeOver(ctx context.Context, i int, v victim, until time.Time) {
	for time.Now().Before(until) {
		out, reply := d.workload.deposit(ctx, i, v.account)
		if out == outOK {
			d.out.event("takeover", "%s takes %s with fence %d and writes it", d.replicas[i].name, v.account, reply.Fence)
			return
		}
		t := time.NewTimer(d.cfg.ttl / 10)
		select {
		case <-t.C:
		case <-d.stop:
			t.Stop()
			return
		}
	}
}

func (d *demo) otherThan(r *replica) int {
	for i, o := range d.replicas {
		if o != r {
			return i
		}
	}
	return -1
}

// narrateLoss narrates a lease command of replica's whose reply the
// redis-loss fault dropped.
func (d *demo) narrateLoss(replica string) {
	d.often("noreply", "%s: a lease command ran in Redis and its reply was lost: watch unknown acquires cleaned up as released, renewals unknown, losses (renewal_unknown)", replica)
}

// pauseOutcome reports how the write a pause interrupted ended.
func (d *demo) pauseOutcome(r *replica, account string, token int64, err error) {
	d.lateOutcome(fmt.Sprintf("%s wakes, writes %s", r.name, account), fmt.Sprintf("%s wakes; its write to %s", r.name, account), token, err)
}

// lateOutcome reports how a late write ended: writes says who wrote what,
// failed the same for a write that failed.
func (d *demo) lateOutcome(writes, failed string, token int64, err error) {
	switch {
	case errors.Is(err, fence.ErrStale):
		d.out.event("fenced", "%s with fence %d: the ledger rejects it (409)", writes, token)
	case err == nil:
		d.out.event("late", "%s with fence %d: accepted (no newer write yet)", writes, token)
	default:
		d.out.event("late", "%s failed: %v", failed, err)
	}
}

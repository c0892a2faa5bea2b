package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
)

// jobKey is the election's key (its terms' lease key), and the job's
// ledger key; jobName is the election's name in telemetry, and its terms'
// lock name.
const (
	jobKey  = "job:compaction"
	jobName = "compaction"
)

// job is a replica's background job, an elected singleton: every replica
// is a candidate in the election on job:compaction (package election,
// named compaction), and the leader runs the ledger's compaction for as
// long as its term lasts. A term starts with a write to the ledger under
// the term's token, which bars every older term's writes there; then the
// leader compacts every 2 to 3 TTLs, writing each result with the same
// token. The candidates that do not lead wait in the key's queue (the wait
// signals) and the oldest is elected when the term ends: at once when the
// leader resigns or its key is taken by force, at the key's expiry when it
// is killed, stalled or paused.
//
// The job runs as a process of its own would, beside the replica's
// servers: its own Redis connection (stalled with the replica's, and
// paused with it) and its own Locker, so that killing the leader (the
// kill fault) takes down the job and not the API.
type job struct {
	r      *replica
	faults *redisFaults
	client *redis.Client
	locker *lease.Locker
	elect  *election.Election
	spared atomic.Bool // writing (maybe held there by a fault): no stall, no kill

	mu   sync.Mutex
	kill context.CancelCauseFunc // ends the running process's Run
}

// errKilled is the cause that ends a killed job's term.
var errKilled = errors.New("killed")

// open connects the job's process to Redis and makes it a candidate.
func (j *job) open(d *demo) error {
	ttl := d.cfg.ttl
	j.faults = &redisFaults{frozen: &j.r.gate, lossRate: j.r.faults.lossRate}
	j.client = d.redis.client(j.faults)
	j.locker = lease.NewLocker(j.client, lease.Config{
		Name: jobName, TTL: ttl, Namespace: namespace, ReleaseTimeout: ttl / 2,
		FenceRetention: max(ttl, 10*time.Minute), Telemetry: d.tel,
	})
	var err error
	j.elect, err = election.New(j.locker, jobKey, election.Config{
		Identity: j.r.name, Name: jobName, Pause: ttl / 4,
		OnStartedLeading: func(t election.Term) { d.terms.started(j.r, t) },
		OnStoppedLeading: func(t election.Term, reason error) { d.terms.stopped(j.r, t, reason) },
	})
	if err != nil {
		return errors.Join(err, j.close())
	}
	return nil
}

func (j *job) close() error {
	if err := errors.Join(j.locker.Close(), j.client.Close()); err != nil {
		return fmt.Errorf("%s's job: %w", j.r.name, err)
	}
	return nil
}

// run campaigns until ctx ends. A killed process restarts after
// killDownTTLs and campaigns again, as a supervisor would restart it.
func (j *job) run(ctx context.Context) {
	for ctx.Err() == nil {
		life, kill := context.WithCancelCause(ctx)
		j.mu.Lock()
		j.kill = kill
		j.mu.Unlock()
		_ = j.elect.Run(life, j.lead)
		killed := context.Cause(life) == errKilled
		kill(nil)
		if !killed {
			return
		}
		j.r.wait(ctx, j.r.d.ttls(killDownTTLs))
		j.faults.down.Store(false)
		if ctx.Err() == nil {
			j.r.d.out.event("restart", "%s: the job's process restarts and queues for %s", j.r.name, jobKey)
		}
	}
}

// killNow kills the job's process: its connection drops every command
// (nothing it would send arrives) and its Run ends, so its term is never
// resigned and its key stays until it expires.
func (j *job) killNow() {
	j.faults.down.Store(true)
	j.mu.Lock()
	kill := j.kill
	j.mu.Unlock()
	if kill != nil {
		kill(errKilled)
	}
}

// lead is the leader's function, for one term: a first write, then a
// compaction every few TTLs, until the term's context ends (the term is
// lost, or the process stops). It never returns while the term is live: a
// return then would resign and end the campaign.
func (j *job) lead(ctx context.Context, t election.Term) error {
	r := j.r
	stop := context.AfterFunc(ctx, func() { r.d.terms.ended(t) })
	defer stop()
	value := fmt.Sprintf("term %d: %s leads", t.Fence, r.name)
	for ctx.Err() == nil {
		j.write(ctx, t, value)
		if r.work(ctx, jitter(r.d.ttls(2), r.d.ttls(3)), r.slowCancel()) != nil {
			break // the term ended: the work stops, unwritten
		}
		value = fmt.Sprintf("compacted in term %d by %s", t.Fence, r.name)
	}
	return nil
}

// write puts value in the ledger with the term's token, if the term is
// still live. A write under way goes on after the term ends, as a request
// already sent does: the ledger's fence judges it. The pause and
// force-release faults strike here.
func (j *job) write(ctx context.Context, t election.Term, value string) {
	if ctx.Err() != nil {
		return
	}
	j.spared.Store(true)
	defer j.spared.Store(false)
	d := j.r.d
	put := func() error {
		return d.ledger.put(fence.NewContext(context.WithoutCancel(ctx), t.Token), jobKey, value)
	}
	switch {
	case !d.leaderPauseArmed.Load() && !d.leaderPaused.Load() && d.forceArmed.CompareAndSwap(true, false):
		_ = j.stuckWrite(ctx, t, put)
	case j.r.pauseHere(&d.leaderPauseArmed, d.leaderVictims, jobKey, t.Fence):
		d.pauseOutcome(j.r, jobKey, t.Fence, put())
	default:
		_ = put()
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

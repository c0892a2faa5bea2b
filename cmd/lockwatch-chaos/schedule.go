package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// faultKind is one kind of fault the schedule injects.
type faultKind string

const (
	faultHolderStop  faultKind = "holder-stop"     // SIGSTOP of a holder process past the TTL
	faultRedisStop   faultKind = "redis-stop"      // SIGSTOP of the lock redis-server past the TTL
	faultDebugSleep  faultKind = "debug-sleep"     // DEBUG SLEEP on the lock primary
	faultClientPause faultKind = "client-pause"    // CLIENT PAUSE ... ALL on the lock primary
	faultDelay       faultKind = "proxy-delay"     // the proxy delays every chunk
	faultBlackhole   faultKind = "proxy-blackhole" // the proxy swallows both directions
	faultReset       faultKind = "proxy-reset"     // the proxy resets every connection
	faultKill        faultKind = "kill-restart"    // kill -9 of the lock primary, restart without persistence
	faultFailover    faultKind = "failover"        // promotion of a replica that missed the last writes
	faultDuplicate   faultKind = "proxy-duplicate" // the proxy delivers a late copy of every lease command
	faultSlowAcquire faultKind = "slow-acquire"    // the proxy delays round trips to just under the acquire timeout
	faultSuspend     faultKind = "suspend"         // SIGSTOP of a holder process, then its lease clock jumps as after a suspend
	// holder-partition: a holder process cut off from every server, one
	// way or both, in the kernel (its own network namespace) where it can.
	faultHolderPartition faultKind = "holder-partition"

	// Sentinel: the sentinels decide each failover; the harness breaks
	// things and waits for their decision.
	faultPrimaryKill      faultKind = "primary-kill"      // kill -9 of the primary; restarted empty after the promotion
	faultPrimaryStop      faultKind = "primary-stop"      // SIGSTOP of the primary past down-after-milliseconds
	faultPrimaryPartition faultKind = "primary-partition" // the primary cut off from clients, sentinels and replicas
	faultSentinelRestart  faultKind = "sentinel-restart"  // kill -9 of one sentinel, restarted later
	faultFailoverTwice    faultKind = "failover-twice"    // primary-kill, then the promoted primary killed too

	// Cluster: the cluster fails a master over itself after a kill or a
	// cut, or when an operator tells a replica to take over.
	faultMasterKill      faultKind = "master-kill"      // kill -9 of a master; restarted empty after its replica took over
	faultMasterPartition faultKind = "master-partition" // a master cut off from clients, its replica and the other nodes
	faultClusterFailover faultKind = "cluster-failover" // CLUSTER FAILOVER on a master's replica: a coordinated hand-over
	faultClusterTakeover faultKind = "cluster-takeover" // CLUSTER FAILOVER TAKEOVER: the replica takes over without a vote or a sync
	faultSlotMigrate     faultKind = "slot-migrate"     // a lock key's slot moved to another master while leases on it are held

	// lockwatch run holders, on a lane of their own (runfaults.go).
	faultRunStop        faultKind = "run-stop"         // SIGSTOP of lockwatch run past the TTL while its program works
	faultRunJobStop     faultKind = "run-job-stop"     // SIGSTOP or SIGTSTP of lockwatch's process group, its job
	faultRunProgramStop faultKind = "run-program-stop" // SIGSTOP or SIGTSTP of its program's process group
	faultRunLeaveChild  faultKind = "run-leave-child"  // the program leaves a child heartbeating after it exits
	faultRunIgnoreTerm  faultKind = "run-ignore-term"  // the program ignores SIGTERM when its lease is lost

	// Election candidates, on a lane of their own (elections.go).
	faultLeaderStop faultKind = "leader-stop" // SIGSTOP of the leading candidate process past its term, before a write
)

// promotes reports whether k makes the sentinels or the cluster promote a
// replica once the fault has struck; the schedule plans the time it takes.
func (k faultKind) promotes() bool {
	switch k {
	case faultPrimaryKill, faultPrimaryStop, faultPrimaryPartition, faultFailoverTwice,
		faultMasterKill, faultMasterPartition:
		return true
	}
	return false
}

// allFaults is every kind, in the order of the report's table.
var allFaults = []faultKind{
	faultHolderStop, faultRedisStop, faultDebugSleep, faultClientPause,
	faultDelay, faultBlackhole, faultReset, faultKill, faultFailover,
	faultDuplicate, faultSlowAcquire, faultSuspend, faultHolderPartition,
	faultPrimaryKill, faultPrimaryStop, faultPrimaryPartition, faultSentinelRestart, faultFailoverTwice,
	faultMasterKill, faultMasterPartition, faultClusterFailover, faultClusterTakeover, faultSlotMigrate,
	faultRunStop, faultRunJobStop, faultRunProgramStop, faultRunLeaveChild, faultRunIgnoreTerm,
	faultLeaderStop,
}

func faultNames(kinds []faultKind) []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return names
}

func parseFaults(s string) ([]faultKind, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	var kinds []faultKind
	for name := range strings.SplitSeq(s, ",") {
		k := faultKind(strings.TrimSpace(name))
		if !slices.Contains(allFaults, k) {
			return nil, fmt.Errorf("-faults: unknown fault %q (known: %s)", k, strings.Join(faultNames(allFaults), ", "))
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// fault is one scheduled fault. Times are offsets from the start of the run
// and lengths; both are drawn in TTLs, so a schedule scales with -ttl.
type fault struct {
	N        int
	Kind     faultKind
	At       time.Duration // planned start, from the start of the run
	Dur      time.Duration // how long the fault lasts (for a failover: how long the replica is cut off before the crash)
	Down     time.Duration // kill-restart and failover: how long the primary stays dead
	Delay    time.Duration // proxy-delay, slow-acquire: the delay per chunk; proxy-duplicate: how late the copies come
	Jump     time.Duration // suspend: how far the holder's lease clock jumps on resume
	Target   int           // holder-stop, suspend, holder-partition: the child process
	Dir      string        // holder-partition: what is dropped (cutOut, cutIn, cutBoth); run-leave-child: what it leaves (leaveGroup, leaveSetsid); run-ignore-term: how the lease is lost (lossCut, lossStop)
	InCommit bool          // holder-stop: stop the holder inside its Commit rather than wherever it is
	Work     time.Duration // run faults: how long the armed program works
	Grace    time.Duration // run-ignore-term: its lockwatch's --grace; 0 for the default
	Signal   string        // run-job-stop, run-program-stop: the stop signal (stopSignals)
}

func (f fault) String() string {
	s := fmt.Sprintf("#%d %s at +%v for %v", f.N, f.Kind, f.At.Round(time.Millisecond), f.Dur.Round(time.Millisecond))
	switch f.Kind {
	case faultHolderStop:
		where := "wherever it is"
		if f.InCommit {
			where = "inside its Commit"
		}
		s += fmt.Sprintf(" (holder process p%d, %s)", f.Target+1, where)
	case faultDelay, faultSlowAcquire:
		s += fmt.Sprintf(" (%v per chunk)", f.Delay.Round(time.Millisecond))
	case faultDuplicate:
		s += fmt.Sprintf(" (copies %v late)", f.Delay.Round(time.Millisecond))
	case faultSuspend:
		s += fmt.Sprintf(" (holder process p%d, lease clock +%v on resume)", f.Target+1, f.Jump.Round(time.Millisecond))
	case faultHolderPartition:
		s += fmt.Sprintf(" (holder process p%d, dropped: %s)", f.Target+1, f.Dir)
	case faultRunStop, faultRunJobStop, faultRunProgramStop:
		s += fmt.Sprintf(" (run holder r%d, %s %v into a program of %v)", f.Target+1, cmp.Or(f.Signal, "SIGSTOP"),
			f.Delay.Round(time.Millisecond), f.Work.Round(time.Millisecond))
	case faultRunLeaveChild:
		s += fmt.Sprintf(" (run holder r%d, a %s child after a program of %v)", f.Target+1, f.Dir, f.Work.Round(time.Millisecond))
	case faultLeaderStop:
		s += " (the leading candidate process, before a write)"
	case faultRunIgnoreTerm:
		grace := "the default --grace"
		if f.Grace > 0 {
			grace = "--grace " + f.Grace.Round(time.Millisecond).String()
		}
		s += fmt.Sprintf(" (run holder r%d, %s; lease lost by a %s %v into a program of %v)", f.Target+1, grace, f.Dir,
			f.Delay.Round(time.Millisecond), f.Work.Round(time.Millisecond))
	case faultKill, faultFailover, faultSentinelRestart:
		s += fmt.Sprintf(" (down %v)", f.Down.Round(time.Millisecond))
	case faultPrimaryKill, faultPrimaryStop, faultPrimaryPartition, faultFailoverTwice, faultMasterKill, faultMasterPartition,
		faultClusterFailover, faultClusterTakeover:
		s += fmt.Sprintf(" (until a replica is promoted, then %v more)", f.Dur.Round(time.Millisecond))
	}
	return s
}

// Schedule timing, in TTLs.
const (
	warmupTTLs = 2.0 // calm start: leases and registers in use before the first fault
	tailTTLs   = 3.0 // calm end: every effect of the last fault shows up in the history
	minGapTTLs = 1.0 // calm between two faults, so that each effect can be attributed
	maxGapTTLs = 2.0

	// sentinelDownAfterTTLs is the sentinels' down-after-milliseconds:
	// longer than every fault that is not meant to fail the primary over
	// (a DEBUG SLEEP or CLIENT PAUSE lasts up to 1.5 TTLs).
	sentinelDownAfterTTLs = 2.0
	// promotionTTLs is what the schedule plans for a Sentinel failover:
	// down-after, then the vote and the promotion.
	promotionTTLs = sentinelDownAfterTTLs + 1.5

	// sentinelDemotion is what the schedule plans for an old primary
	// that comes back after a Sentinel failover to be demoted: the
	// sentinels see it at their next INFO of it, every 10 s (a constant
	// of Sentinel's). The fault lasts until then (awaitDemotion).
	sentinelDemotion = 10 * time.Second

	// clusterNodeTimeoutTTLs is the Cluster's cluster-node-timeout: a
	// master unreachable for that long is failed over by its replica,
	// about a second later (its election delay). The same reasoning as
	// for Sentinel's down-after; promotionTTLs covers it too.
	clusterNodeTimeoutTTLs = 2.0
)

// schedule draws the faults of a run from its seed. Each round injects
// every enabled kind once, in an order drawn from the seed, so a run long
// enough for one round sees every kind. The plan depends on nothing but its
// arguments; what the faults hit at run time (which holder is in its
// Commit, which key a restart empties) depends on timing and is logged.
// The run holders' faults are a lane of their own (runfaults.go), and so
// are the election's (elections.go), each drawn from a stream of the seed
// of its own, numbered after the lanes before it.
func schedule(seed uint64, duration, ttl time.Duration, kinds []faultKind, procs, runs int) []fault {
	var mainKinds, runKinds, electKinds []faultKind
	for _, k := range kinds {
		switch {
		case k.runLane():
			runKinds = append(runKinds, k)
		case k.electLane():
			electKinds = append(electKinds, k)
		default:
			mainKinds = append(mainKinds, k)
		}
	}
	plan := lane(rand.New(rand.NewPCG(seed, 0x6c6f636b77617463)), nil, duration, ttl, mainKinds, procs, runs) // second word: "lockwatc"
	plan = lane(rand.New(rand.NewPCG(seed, 0x72756e6c616e65)), plan, duration, ttl, runKinds, procs, runs)    // "runlane"
	return lane(rand.New(rand.NewPCG(seed, 0x656c6563746c6e)), plan, duration, ttl, electKinds, procs, runs)  // "electln"
}

// lane appends to plan the faults of kinds, one after the other, drawn
// from rng.
func lane(rng *rand.Rand, plan []fault, duration, ttl time.Duration, kinds []faultKind, procs, runs int) []fault {
	ttls := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(ttl))
	}
	if len(kinds) == 0 {
		return plan
	}
	at := time.Duration(warmupTTLs * float64(ttl))
	end := duration - time.Duration(tailTTLs*float64(ttl))
	for {
		for _, i := range rng.Perm(len(kinds)) {
			f := fault{N: len(plan) + 1, Kind: kinds[i], At: at}
			switch f.Kind {
			case faultHolderStop:
				// Past the TTL with a margin: the stopped lease's key expires
				// at most one TTL after the stop, and another holder has
				// time to take the key and write before the stopped one
				// resumes.
				f.Dur = ttls(2, 3)
				f.Target = rng.IntN(max(procs, 1))
				f.InCommit = rng.Float64() < 0.75
			case faultRedisStop:
				f.Dur = ttls(1.2, 2)
			case faultDebugSleep, faultClientPause:
				f.Dur = ttls(0.5, 1.5)
			case faultDelay:
				f.Dur = ttls(1, 2)
				f.Delay = ttls(0.02, 0.15)
			case faultBlackhole:
				f.Dur = ttls(0.5, 1.5)
			case faultReset:
				f.Dur = ttls(0.1, 0.5)
			case faultKill:
				f.Down = ttls(0.2, 1)
			case faultFailover:
				f.Dur = ttls(0.5, 1)
				f.Down = ttls(0.2, 0.5)
			case faultDuplicate:
				// Copies from just after the original to past the lease's
				// end: a renewal, a release or an acquire of a waiting
				// holder runs again when its lease is renewed, gone, or
				// someone else's.
				f.Dur = ttls(0.5, 1.5)
				f.Delay = ttls(0.05, 1.5)
			case faultSlowAcquire:
				// Round trips just under the acquire (and renewal) timeout,
				// TTL/5: acquires succeed with little of their lease left,
				// renewals come back near the cancel point, and the shared
				// Locker's pipelines carry such leases beside healthy ones.
				f.Dur = ttls(0.5, 1.5)
				f.Delay = ttls(0.08, 0.095)
			case faultSuspend:
				// The lease clock jumps past every lease's validity. Half the
				// stops are short, shorter than the scheduler's next timer
				// (TTL/3 at most): Redis keeps the key, only the lease clock
				// says the lease is lost, and a scheduler that waits for its
				// Go timer leaves the context live (late_cancel). The other
				// half last past the TTL: the key is gone too.
				f.Jump = ttls(1, 2)
				if rng.IntN(2) == 0 {
					f.Dur = ttls(0.02, 0.2)
				} else {
					f.Dur = ttls(0.5, 1.5)
				}
				f.Target = rng.IntN(max(procs, 1))
			case faultPrimaryKill, faultPrimaryStop, faultPrimaryPartition, faultMasterKill, faultMasterPartition,
				faultClusterFailover, faultClusterTakeover:
				// How long the old primary stays down, stopped or cut
				// off once a replica was promoted: it comes back to find
				// itself demoted.
				f.Dur = ttls(0.2, 1)
			case faultFailoverTwice:
				f.Dur = ttls(0.2, 1)
			case faultSentinelRestart:
				f.Down = ttls(0.5, 2)
				f.Target = rng.IntN(3)
			case faultSlotMigrate:
				f.Dur = ttls(0.5, 1.5)
			case faultHolderPartition:
				// Past the TTL: the cut holder's lease must end by its own
				// clock, and another holder takes the key meanwhile.
				f.Dur = ttls(1.5, 2.5)
				f.Target = rng.IntN(max(procs, 1))
				f.Dir = cutDirections[rng.IntN(len(cutDirections))]
			case faultRunStop, faultRunJobStop, faultRunProgramStop, faultRunIgnoreTerm:
				// A program that works well past the stop: its key expires
				// at most a TTL after it, another holder takes it, and the
				// program, unless ended, heartbeats on beside it. A
				// stopped program is inspected after 1.5 TTLs or more:
				// its key must have expired by then.
				f.Target = rng.IntN(max(runs, 1))
				f.Work = ttls(2.5, 3.5)
				f.Delay = ttls(0.1, 0.4)
				f.Dur = ttls(1.5, 2.5)
				switch f.Kind {
				case faultRunJobStop, faultRunProgramStop:
					f.Signal = []string{"SIGSTOP", "SIGTSTP"}[rng.IntN(2)]
				case faultRunIgnoreTerm:
					// The default grace half the time; otherwise up to
					// the margin, or past it, up to a TTL (lockwatch may
					// refuse it): a lease lost at its first failed renewal
					// leaves about half a TTL before its key can expire.
					switch rng.IntN(4) {
					case 0:
						f.Grace = ttls(0.025, 0.05)
					case 1:
						f.Grace = ttls(0.2, 1)
					}
					f.Dir = []string{lossCut, lossStop}[rng.IntN(2)]
				}
			case faultLeaderStop:
				// Past the term with a margin, as holder-stop: the next
				// leader is elected and writes before the stopped one
				// resumes and finishes its write.
				f.Dur = ttls(2, 3)
			case faultRunLeaveChild:
				f.Target = rng.IntN(max(runs, 1))
				f.Work = ttls(0.1, 0.5)
				f.Dur = ttls(1, 2) // the child's life after the program's work
				f.Dir = []string{leaveGroup, leaveSetsid}[rng.IntN(2)]
			}
			length := f.Dur + f.Down
			if f.Kind.electLane() {
				length += time.Duration(leaderArmTTLs * float64(ttl))
			}
			if f.Kind.runLane() {
				length += f.Delay + time.Duration(armTTLs*float64(ttl))
				if f.Kind == faultRunLeaveChild {
					length += f.Work
				}
			}
			failovers := 0
			switch {
			case f.Kind == faultFailoverTwice:
				failovers = 2
			case f.Kind.promotes():
				failovers = 1
			}
			length += time.Duration(failovers) * time.Duration(promotionTTLs*float64(ttl))
			if slices.Contains(topoSentinel.faults(), f.Kind) {
				length += time.Duration(failovers) * sentinelDemotion
			}
			if f.At+length > end {
				return plan
			}
			plan = append(plan, f)
			at += length + ttls(minGapTTLs, maxGapTTLs)
		}
	}
}

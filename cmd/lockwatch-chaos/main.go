// Command lockwatch-chaos checks lockwatch's central claim with real faults: under
// pauses, stalls, crashes and failovers, a fenced resource never accepts a
// write older than one it already accepted, and lockwatch's metrics count
// every lease lost and every stale write rejected. And lockwatch run's:
// stopped, cut off or left behind, its program and what it started stop
// working before the key can expire or is released.
//
//	go run ./cmd/lockwatch-chaos -duration 2m -seed 42
//	go run ./cmd/lockwatch-chaos -topology sentinel -duration 10m
//	go run ./cmd/lockwatch-chaos -topology cluster -duration 10m
//
// # What runs
//
// Everything on loopback (127.0.0.1; Cluster nodes send from 127.0.0.11
// to 127.0.0.16), or in network namespaces the run makes (10.250.0.0/16,
// for holder-partition), started by the run and stopped when it ends
// (also on Ctrl-C or failure):
//
//   - the lock Redis, in the shape -topology names:
//   - single (the default): a redis-server primary with a replica, reached
//     by every holder through a fault proxy (internal/testenv/faultproxy) that can
//     delay, blackhole or reset the traffic, and that the harness re-points
//     at the replica when it promotes it;
//   - sentinel: a primary, two replicas and three redis-sentinel processes
//     (redis-server --sentinel) that decide every failover; holders connect
//     through redis.NewFailoverClient. Each server sits behind a fault proxy
//     of its own and announces the proxy's port (replica-announce-port), so
//     that clients, sentinels and replicas all reach it through the proxy,
//     as over one network: cutting the proxy off cuts the server off from
//     all of them. down-after-milliseconds is 2 TTLs, longer than every
//     fault not meant to fail the primary over; failover-timeout is 2 TTLs
//     (Sentinel does not fail one master name over again within twice
//     that);
//   - cluster: three masters with a replica each; holders connect through
//     redis.NewClusterClient. Each node sits behind two fault proxies, one
//     for clients and replication and one for the cluster bus, announces
//     their ports (cluster-announce-port, cluster-announce-bus-port), and
//     connects to its peers from a loopback address of its own
//     (bind-source-addr 127.0.0.N), so that the peers' proxies can cut its
//     own connections too (faultproxy's Isolate). cluster-node-timeout is
//     2 TTLs;
//   - the fenced registers: one per lock key in a fence.RedisStore on a
//     redis-server of its own that is never faulted, and one per key in a
//     PostgreSQL table written through a fence.Table (a schema of its own,
//     dropped at the end; the server comes from -dsn or
//     LOCKWATCH_POSTGRES_DSN);
//   - the guarded register: one more per key, a map in this process that
//     takes every write it is handed without looking at its token, served
//     on loopback through PUT /reg/{key}, POST /reg/{key} and a unary and a
//     client-stream gRPC method, all behind ONE middleware.Guard (admitted
//     by a fence.RedisStore of resource chaos_guard on the fence store's
//     Redis). The guard's admit check and its per-key serialization are its
//     only fence, which is what a Guard promises; the register appends
//     every write it applies to an accept log, in the order they land;
//   - holders: -goroutines in this process and -procs child processes (this
//     binary re-executed, talking to the parent over stdin and stdout, so
//     that the parent can SIGSTOP them). Each has its own Locker and loops:
//     acquire a random key, read its Redis and PostgreSQL registers (the
//     guarded one has no read route), work for up to 1.5 TTL on
//     the lease's context, then write all three registers inside
//     lease.Commit with the lease's fence, and release. The guarded write
//     comes first, through an entry point drawn from the seed, with the
//     fence in the Fencing-Token header or fencing-token metadata, and
//     slowly: an HTTP body sends half its value at once and the rest 0.05
//     to 0.2 TTL later, a stream opens and sends its value as late;
//   - -runs lockwatch run holders (2 by default): each loops, running
//     lockwatch run --key K --ttl TTL on a random key of the same
//     namespace (cmd/lockwatch, built from the module the harness runs
//     in, or -lockwatch), in a process group of its own as a shell's job
//     would be, with this binary as its program. The program heartbeats
//     every TTL/100 with the fence lockwatch exports to it
//     ($LOCKWATCH_FENCE) onto its stdout, a pipe the harness reads, for
//     0.5 to 2.5 TTLs, and exits on SIGTERM. One program in four ignores
//     SIGTERM; half the runs give --grace, up to the safety margin or past
//     it, up to a TTL (lockwatch refuses those: exit 64). When the run
//     stops, the lockwatch run under way gets SIGTERM, as a supervisor
//     sends it. On single each reaches the lock Redis through a forwarder
//     of its own;
//   - election candidates: -candidates goroutines of this process (2 by
//     default), each with a Locker of its own, and -candidate-procs child
//     processes (2), all campaigning with election.Run for the one key e1
//     of the same namespace (one more key the Cluster faults take in
//     turn). A term's leader reads e1's Redis and PostgreSQL registers,
//     claims its term by writing both once with the term's token, then
//     writes e1's guarded register every 1/8 to 1/2 TTL with that token
//     (a Guard admits the several requests of one lease), checking its
//     term's context before each write, for 0.5 to 2 TTLs; then it
//     returns, the term is resigned and the next candidate in the queue
//     elected, and it campaigns again. Each term is recorded: its
//     fence, its leader, when its function started and returned, when its
//     context ended, and how Run said it ended (lost, late);
//   - -elects lockwatch elect candidates (2), each a run holder that
//     loops lockwatch elect --key e1 --ttl TTL --identity cN with this
//     binary as its program, as a lockwatch run holder loops lockwatch
//     run (the same draws of work, SIGTERM ignored and --grace): its
//     program heartbeats with the term's fence until its work is done,
//     lockwatch resigns and exits with its status, and the holder
//     campaigns again. A term lost meanwhile ends the program, and
//     lockwatch campaigns again itself;
//   - semaphore holders: -permit-holders goroutines of this process (4 by
//     default), each with a Locker of its own, sharing the semaphore s1 of
//     -permit-limit permits (2) of package permits (one more key the
//     Cluster faults take in turn). Each loops: take a permit (one
//     acquire in three waits up to a TTL), read the permit's Redis and
//     PostgreSQL registers, work on its context for up to 1.5 TTLs, write
//     both inside Commit with its token under the permit's key s1#i (a
//     mark per permit: each permit is its own fencing domain), release;
//   - shared lease holders: -shared-readers (3) and -shared-writers (2)
//     goroutines of this process, each with a Locker of its own, using
//     the shared lease r1 of package permits (permits.NewShared) with
//     -shared-limit readers' permits (2), one more key the Cluster faults
//     take in turn. A reader loops as a semaphore holder does (Read, one
//     in three waiting up to a TTL): it reads r1's registers and writes
//     its permit's, r1#i, with the permit's token. A writer loops: Write,
//     waiting up to 3 TTLs for the readers to yield, read r1's registers,
//     work, write them inside Commit with the writer's token under r1,
//     release, rest 1 to 3 TTLs. A reader yielding to a writer
//     (lease.LossYielded) is expected, and counted apart.
//
// # Faults
//
// A schedule drawn from -seed with math/rand/v2 (every kind once per round,
// in a random order, with random lengths in TTLs): SIGSTOP of a holder
// process past the TTL (usually inside its Commit, midway through its
// guarded write: admitted, its body unfinished, the gap no client-side
// check closes), SIGSTOP of the lock redis-server past the TTL, DEBUG SLEEP,
// CLIENT PAUSE, proxy delay, blackhole and reset, kill -9 and a restart
// without persistence, and a failover to a replica that was cut off first
// and so missed the last writes; and three that take the lease package down
// paths the others do not:
//
//   - proxy-duplicate: the proxy delivers a copy of every lease command
//     again, from just after the original to 1.5 TTLs later, on a
//     connection of its own whose replies nobody reads, as a go-redis retry
//     on a new connection does while the first attempt sits in a stalled
//     server's buffer (faultproxy.Duplicate: copies are whole RESP
//     commands). A waiting acquire's earlier attempts, renewals and
//     releases run again when their lease is renewed, gone or someone
//     else's;
//   - slow-acquire: the proxy delays round trips to just under the acquire
//     (and renewal) timeout, TTL/5: leases start with little validity left
//     and renewals are confirmed near the cancel point, in the same
//     pipelines as the shared Locker's healthy leases;
//   - suspend: a holder process moves its lease clock ahead by 1 to 2 TTLs
//     (internal/suspend) and stops itself, half the time briefly (0.02 to
//     0.2 TTL: Redis keeps the key, no Go timer of the process falls due),
//     half the time past the TTL (keys expire); the parent resumes it. On
//     resume its lease clock is ahead of its Go timers, as CLOCK_BOOTTIME is
//     after a system suspend, before any timer has run: Err reports the loss
//     at once, and the context must follow within the cancellation window.
//
// On sentinel, the faults that hit the primary or its proxy (DEBUG SLEEP,
// CLIENT PAUSE, the proxy's delay, reset and duplicate, slow-acquire) hit
// whichever server the sentinels name as the primary at the time, and the
// single topology's hand-made failover, restart, SIGSTOP and blackhole past
// the TTL give way to five the sentinels answer:
//
//   - primary-kill: kill -9 of the primary; once the sentinels have
//     promoted a replica, the old primary restarts empty, and they make it
//     a replica;
//   - primary-stop: SIGSTOP of the primary past down-after-milliseconds,
//     continued after the promotion: it comes back believing it is the
//     primary until the sentinels demote it;
//   - primary-partition: the primary's proxy swallows everything, from
//     clients, sentinels and replicas alike, until the promotion;
//   - sentinel-restart: kill -9 of one sentinel, restarted later;
//   - failover-twice: primary-kill, then the promoted primary killed too.
//
// On cluster, every fault that hits a server hits the master serving one
// lock key's slot (the faults take the keys in turn), and five are the
// cluster's:
//
//   - master-kill: kill -9 of the master; its replica takes over after the
//     node timeout, and the old master restarts empty and rejoins as a
//     replica;
//   - master-partition: the master cut off from clients, its replica and
//     the other nodes, both ways, until its replica took over;
//   - cluster-failover: CLUSTER FAILOVER on the master's replica, the
//     coordinated hand-over of a maintenance;
//   - cluster-takeover: CLUSTER FAILOVER TAKEOVER, the replica taking over
//     without a vote and without waiting for the replication stream;
//   - slot-migrate: the lock key's slot moved to another master as
//     resharding does, one key at a time (MIGRATE) and slowly, while leases
//     on it are held and renewed: ASK and TRYAGAIN while it moves, MOVED
//     after.
//
// A fault that brings an old primary back (a restart, a resume, a healed
// partition) lasts until it reports itself a replica: until then it is a
// primary too, and takes the writes of a client that asks a sentinel not
// yet told of the failover.
//
// The report gives, for each failover, how long until a replica was
// promoted, how long until the first acquire of a key the old primary
// served succeeded, and how many of the leases live at the break were
// lost, by reason.
//
// On single, holder-partition cuts one holder process off from every
// server for 1.5 to 2.5 TTLs, dropping what it sends, what it is sent, or
// both (drawn from the seed). Where the harness is root and has ip and
// nsenter, every holder process runs in a network namespace of its own
// (CLONE_NEWNET), joined to the harness's by a veth pair, and reaches each
// server through a forwarder listening on the harness's end; a cut is a
// blackhole route, so the kernel drops the packets and the holder's TCP
// retransmits into nothing, then delivers what it held back once healed.
// Elsewhere (or with -no-netns) the forwarders listen on loopback and cut
// in user space, and the run says so.
//
// -clock-skew D starts the replicas (single and sentinel) with wall clocks
// D behind the machine's, through internal/testenv/redistest's clock shim: the
// fence's one clock assumption broken on purpose (RELIABILITY.md). The
// whole server's wall clock moves, key expiry included (Redis replicates
// expiry as absolute times, so a key lives D longer on a promoted replica
// that is behind); after a failover the skewed server is the primary.
// -timeline FILE.svg draws the run: faults as bands, each holder's leases
// as bars, losses, rejected and accepted writes as marks.
//
// The lockwatch run holders' faults run on a lane of their own, beside
// the main schedule and drawn from the seed the same way: they touch no
// server. Each arms one run holder's next program (it works 2.5 to 3.5
// TTLs, or what the fault says), waits for its first heartbeat, and
// strikes 0.1 to 0.4 TTL into its work:
//
//   - run-stop: SIGSTOP of lockwatch for 1.5 to 2.5 TTLs, then SIGCONT,
//     as kill -STOP or a debugger does;
//   - run-job-stop: SIGSTOP or SIGTSTP of lockwatch's process group, its
//     job, as a shell's stop of a background job does, then SIGCONT;
//   - run-program-stop: SIGSTOP or SIGTSTP of the program's group, as
//     Ctrl-Z does; then, before the SIGCONT to it and to lockwatch's job,
//     the key must no longer be held with the program's fence;
//   - run-leave-child: the program (working 0.1 to 0.5 TTL) leaves a
//     process heartbeating with its fence 1 to 2 TTLs past its exit, in
//     its process group or out of it (setsid);
//   - run-ignore-term: the program ignores SIGTERM, its lockwatch gets
//     --grace within the margin, past it, or the default, and loses the
//     lease: cut off from the lock Redis (its forwarder swallows
//     everything; single only) or stopped (SIGSTOP), for 1.5 to 2.5 TTLs.
//
// While lockwatch, its job or its program is stopped or cut off, the
// harness reads what Redis holds for the key every TTL/20 and notes when
// the program's lease's key expired there.
//
// The election has a lane of its own too, drawn the same way, with one
// fault that touches no server:
//
//   - leader-stop: SIGSTOP of the leading candidate process for 2 to 3
//     TTLs, after its check of the term's context and before its next
//     guarded write goes out (every candidate process is armed, the first
//     to write is stopped; where none leads within 8 TTLs the fault says
//     so). The next leader is elected once the term's key expired, claims
//     and writes; on resume the deposed leader's write goes out, and the
//     Guard must refuse it.
//
// Every fault is printed with its timing and the seed; -seed S with the
// same -topology, -duration, -ttl, -faults, -procs and -runs replays the
// schedule.
//
// # Checks
//
// Every operation is recorded with its invoke and return times (one
// system-wide monotonic clock for all processes), holder, key, fence and
// outcome. At the end:
//
//  1. fence order: no register accepted a write whose token is at or below
//     one it had accepted before (by real time; for PostgreSQL also by the
//     exact order of a trigger's audit log, and for the guarded register by
//     its accept log, which catches a stale write that overlapped the newer
//     one in time: with a Guard per route, or no Guard, a write admitted
//     with 41 whose body was slow lands after one with 42, and counts in
//     stale_accepted and order_violations); and a lease acquired after
//     another one on the same key returned got a larger fence, across
//     restarts and failovers;
//  2. linearizability of each register's history against a fenced register
//     model, with porcupine; a write whose outcome is unknown may or may not
//     have taken effect. On failure porcupine's HTML visualisation is
//     written and its path printed;
//  3. metric exactness: lockwatch's counters, read from an OpenTelemetry SDK
//     manual reader in every process, equal what the holders saw: fence
//     rejections (the guard's 409 and ABORTED answers included, counted in
//     this process for every holder's write), leases lost, late
//     completions, acquires by result; and the up-down counters back at
//     zero at the end (no lease active, no work overrunning, no caller
//     waiting);
//  4. no holder went on with its work longer than the cancellation window
//     (-cancel-window, default the lease's safety margin) after its lease's
//     context was cancelled, except holders that were deliberately stopped;
//     every holder stopped inside its Commit must be counted as a late
//     completion (Commit's write is never cancelled: a loss while it runs
//     makes it a late completion, which the fence then judges); and no
//     lease's context was live longer than the window after its Err first
//     reported the loss (late_cancel: every holder polls Err every 2ms
//     while it holds a lease; a holder stopped in between is left out);
//  5. overlaps: no two leases of one key had live contexts at the same
//     time. A lease is live from its Acquire's return to the first of its
//     context's Done and its Release, both measured by its holder on the
//     system-wide clock, so the comparison needs no tolerance. An overlap
//     is explained, and counted apart, when Redis lost or split the key,
//     on the primary that served it: a failover that may lose writes
//     (replication is asynchronous; all but the coordinated
//     cluster-failover), the first lease taken by the promotion and the
//     second after the break, at most a TTL after the promotion (the first
//     learns of the loss from its next renewal); an old primary back as a
//     primary too, both leases taken before a TTL after its demotion; a
//     kill-restart. Or when the first holder's process was stopped
//     (holder-stop, suspend) up to the window before the second acquire:
//     only the fence protects against a stopped process. The others are
//     unexplained_overlaps. A lockwatch run program works from its first
//     heartbeat to the last of any process with its fence (what it left
//     behind included), and counts as a lease: two programs of one key
//     heartbeating at once, or one heartbeating while another holder's
//     lease is live, is an overlap like two live leases, explained only
//     by a loss in Redis. A stopped lockwatch explains nothing: lockwatch
//     run promises to end its program before the key can expire. The one
//     exception is a process the harness left unsupervised on purpose,
//     where lockwatch run says it cannot reach it (off Linux, one that
//     left the program's group with setsid): its heartbeats are left out,
//     and counted;
//  6. lockwatch run: no process heartbeated with a fence after the
//     lockwatch run that held it exited (it released the key), nor after
//     the key expired in Redis where a fault saw it expire; a stopped
//     program's key was not held past 1.5 TTLs of its stop (a stopped
//     program holds its key for one TTL at most); every lockwatch run
//     exited with a status its manual gives for what happened (0, 79 lost,
//     75 held, 76 unknown, 69 unavailable, 64 only for a --grace past the
//     margin, 143 only after the run's SIGTERM) and within 10 TTLs plus
//     20 s of that SIGTERM; no program, and nothing it left, outlived its
//     lockwatch run;
//  7. no goroutine and no child process outlives the run;
//  8. the election: its terms count as leases in check 5 (a term is live
//     from its function's start to the first of its context's end and its
//     return), so two leaders whose work overlapped while Redis did not
//     lose the key, and no stop explains it, are unexplained_overlaps;
//     in check 1 and 2 e1's guarded register may accept one token again
//     and again, never a lower one; a leader stopped by leader-stop past
//     its TTL must have completed late (election.ErrLateCompletion); a lost
//     term's function returns within the cancellation window of its
//     context's end (of the end of the write the loss found under way);
//     and the lockwatch_election_* counters equal the terms seen: started,
//     lost, late, and no leader left at the end. A lockwatch elect
//     program's work counts as a term, as a lockwatch run program's counts
//     as a lease; no process heartbeated with a fence after the lockwatch
//     elect that led with it exited, and each exited with a status its
//     manual gives (0, 79, 69, 64 only for a --grace past the margin, 143
//     only after the run's SIGTERM).
//  9. the permits: each permit counts as a lease of its own key s1#i in
//     checks 1 to 5 (two holders of one permit live at once, a stale
//     write of a permit accepted after its newer holder's); a holder that
//     took a permit while -permit-limit other holders were live, no loss
//     in Redis of their permit's key and no stop explaining their
//     overlap with it, is an unexplained_overlap too; and the
//     lockwatch_permits_* counters equal the history (acquires by
//     result, permits lost), nothing held or waiting at the end. The
//     permits line gives acquires, permits lost, writes by outcome and
//     the most permits live at once against the limit.
//  10. the shared lease: readers count as permits r1#i and writers as
//     leases of r1 in checks 1 to 5, so two writers live at once, a
//     writer's token minted below an earlier writer's, and a writer's
//     stale write accepted are violations there; a reader live beside a
//     writer, or more than -shared-limit readers live, that no loss in
//     Redis of the first one's key and no stop explains is an
//     unexplained_overlap; the lockwatch_permits_* counters equal the
//     readers' acquires and losses, the leases' late completions the
//     history's, nothing held, waiting or active at the end. The shared
//     lease line gives acquires by role, yields apart from other
//     losses, writes, and the overlaps.
//
// -unfenced is the negative control: the same schedule, with writes that
// skip the fence check, and the guarded register served without its
// Guard. It must report violations; with leader-stop, a deposed leader's
// write accepted after the next leader's.
//
// A guarded write has one of four outcomes: accepted (204, OK), stale
// (409, ABORTED), refused busy (503 or UNAVAILABLE FENCE_BUSY: it waited
// half a TTL for a key a stopped holder held, and was never admitted) or
// unknown (a transport error). The report prints them, accepted writes by
// entry point, and the accept log's length and disorder.
//
// The lockwatch run line gives the runs by exit status, the heartbeats,
// and the processes that heartbeated after their key expired or their
// lockwatch run exited.
//
// The lockwatch elect line gives the campaigns by exit status and the
// programs they ran. The election line gives its terms (the lockwatch
// elect programs apart), losses, late completions, the leaders' writes by
// outcome, and the time without a leader: from the latest end of the
// terms before a term (a stopped leader's from its stop) to its start.
// Its table gives, per fault kind active when it happened (as the fault
// table's: a stopped leader's events for its leader-stop, the others for
// the main lane's faults), transitions, terms lost, late completions,
// stale writes rejected and the time without a leader, in all and
// longest.
//
// The fault table counts, per fault kind active at the time (or ended less
// than 2 TTLs before), leases lost, unknown acquires, stale writes, overlaps
// (at the second acquire), unexplained ones and late cancels (at the first
// Err that reported the loss). An overlap counts for a fault of the run
// holders' lane when its first holder is a lockwatch run program, else for
// one of the main lane. The last line of the output sums it up, and
// the exit status is non-zero on any violation, late cancels included:
//
//	chaos: seed=S duration=D ops=N faults=F stale_accepted=0 order_violations=0 unexplained_overlaps=0 linearizable=ok metrics_exact=true
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

func main() {
	if isChild() {
		os.Exit(childMain())
	}
	if isProgram() {
		os.Exit(programMain())
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	// The faults make go-redis log every failed dial on stderr, which would
	// bury the progress line; the history records every outcome anyway.
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the process at once
	}()
	sum, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if !sum.ok() {
		os.Exit(1)
	}
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

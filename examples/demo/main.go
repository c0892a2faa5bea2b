// Command demo runs lockwatch under fire: a small replicated service that
// holds fenced Redis leases, a workload, and the faults that make locks
// unsafe, with every lockwatch signal on a Prometheus endpoint.
//
//	go run ./examples/demo
//
// needs nothing else: Redis is embedded (miniredis, its keys expiring in
// real time) unless -redis points at a real one. Everything listens on
// 127.0.0.1 only.
//
// # What runs
//
// In one process, on loopback ports:
//
//   - replicas (-replicas, default 2) of one service, each with its own
//     lease client and Locker, as separate processes would have: an HTTP
//     API (POST /accounts/{id}/deposit, behind middleware.HTTP and
//     otelhttp's handler), a gRPC Reports service (Generate and a
//     server-streaming Stream, behind both lockwatch interceptors and
//     otelgrpc's stats handler, with a max hold of 1.5 TTLs), and a
//     background job, the ledger's compaction, an elected singleton
//     (package election): the leader writes the ledger with its term's
//     token as the term starts and after each compaction, while the
//     other replicas wait in the key's queue;
//   - a ledger, the downstream resource they all write to, whose writes sit
//     behind a middleware.Guard over a fence.RedisStore: a write with a
//     fencing token older than one it accepted gets 409;
//   - a workload: -workers clients calling both replicas' API and service
//     concurrently on a few accounts (-accounts), so that requests contend.
//
// Handlers read the ledger, work, and write back through lease.Commit with
// their lease's token (middleware.RoundTripper puts it in the
// Fencing-Token header).
//
// # Faults
//
// On by default; -faults=false turns them off, -faults=pause,overrun picks
// some. Each one makes particular signals fire:
//
//	redis-loss   1% of lease commands lose their reply (the command ran):
//	             unknown acquires whose clean-up finds them held ("released"),
//	             renewals that end unknown, leases lost (renewal_unknown).
//	redis-stall  every ~4 TTLs one replica's Redis connections stall for
//	             0.8 TTL (the job leader's, if one leads): unknown acquires
//	             (clean-up "absent", or "unresolved" when it times out too),
//	             failed renewals and losses (renewal_unknown), releases of
//	             unknown outcome. The leader's term is lost and its work
//	             cancelled before the key can expire; the next candidate is
//	             elected once it has.
//	pause        every ~7 TTLs one replica stops for 2.5 TTLs in the middle
//	             of a deposit's final write (after Commit's check: the gap no
//	             client-side check closes), like a stop-the-world pause; every
//	             other time, the job leader's replica in a write of the
//	             leader's. Its leases reach their cancel points (deadline);
//	             the other replica takes the account with a newer fence, or
//	             is elected, and writes; the paused write then arrives with
//	             the old fence and the ledger rejects it: a stale write
//	             stopped, lockwatch_fence_rejections_total.
//	overrun      every ~5 TTLs a report ignores its context and runs past the
//	             max hold: a loss (max_hold), work still running after its
//	             lease was lost (lockwatch_lease_overrunning), a success
//	             answered after the loss (a late completion), a release that
//	             finds the key expired (not_held).
//	slow-cancel  30% of handlers take 0.1 to 0.5 TTL to stop once their lease
//	             is lost: the cancellation latency histogram.
//	near-expiry  every ~2.5 TTLs a report commits with less validity left than
//	             Commit's warning threshold (near_expiry) or, every other
//	             time, below its hard margin (refused).
//	force-release  every ~9 TTLs the job's leader hangs in a write, and an
//	             operator takes its key back (Locker.ForceRelease, as
//	             lockwatch release --force does:
//	             lockwatch_lease_force_releases_total). The next candidate is
//	             elected at once and writes with a newer term; the old leader
//	             loses its term at its next renewal (force_released); its
//	             hung write then goes on with the old fence and the ledger
//	             rejects it (409).
//	kill         every ~11 TTLs the job leader's process is killed: nothing
//	             resigns its term, the next candidate is elected once the
//	             key expires (the demo says after how long without a
//	             leader), and the killed process restarts 2 TTLs later.
//
// The schedule scales with -ttl (default 1s).
//
// # What it shows
//
// On a terminal, one status line (requests, acquired, contended, unknown,
// lost, stale writes rejected) with the injected faults printed above it as
// they happen, and every term of the job's election: who was elected, after
// how long without a leader, and how each term ended (its election's
// callbacks); when stdout is not a terminal, plain lines every 5 seconds.
// At the end, a summary table read from the same metrics Prometheus
// scrapes, and the job's terms.
//
// Metrics are served on http://127.0.0.1:9464/metrics (-metrics), in the
// Prometheus text format, or OpenMetrics with exemplars (trace and span ids)
// for a scraper that asks for it:
//
//	curl -H 'Accept: application/openmetrics-text' http://127.0.0.1:9464/metrics | grep lockwatch_
//
// The same server shows each replica's live leases (package debugpage):
// http://127.0.0.1:9464/debug/lockwatch for the first replica,
// /debug/lockwatch/replica-b for the second, and so on, and
// /debug/lockwatch/replica-a/job for a replica's job; ?format=json for
// JSON. The page refreshes itself every 2 seconds.
//
// Traces are exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is
// set. lockwatch's Warn logs (losses, unknown acquires, stale writes) go to
// -log FILE, or nowhere.
//
// -duration bounds the run (default 60s; 0 runs until Ctrl-C). Ctrl-C stops
// it cleanly: faults end, clients stop, servers drain, Lockers close,
// telemetry is flushed; a second Ctrl-C exits at once. Against a real Redis
// the demo writes under the key prefix lockwatch-demo: and deletes those
// keys on exit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the process at once
	}()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

package main

import (
	"fmt"
	"strings"
)

// The failover section sits between these markers, so that -only failover
// can replace it and leave the rest of the report as it was measured.
const (
	failBegin = "<!-- failover: benchmd -only failover replaces this section -->"
	failEnd   = "<!-- /failover -->"
)

// failElections are BenchmarkFailover's elections, in the order of the
// tables; failCases its faults.
var (
	failElections = []string{"lockwatch", "etcd"}
	failCases     = []string{"kill", "resign", "pause"}
)

// failoverRun is the go test run of the failover benchmark, in the failover
// module (outside go.work: GOWORK=off), once per process.
func failoverRun(times int) benchRun {
	return benchRun{times: times, dir: "failover", env: []string{"GOWORK=off"},
		args: []string{"test", "-run", "^$", "-bench", "^BenchmarkFailover$", "-benchtime", "1x", "-count", "1", "-timeout", "30m", "."}}
}

func failDesc(election string) string {
	switch election {
	case "lockwatch":
		return "lockwatch `election.Run`"
	case "etcd":
		return "etcd `concurrency.Election` " + moduleVersionIn("failover/go.mod", "go.etcd.io/etcd/client/v3")
	}
	return election
}

// writeFailover writes the failover section; alone, as -only failover
// writes it, it states the revision, date and load of its own run and
// carries its raw output.
func (rp *report) writeFailover(p func(string, ...any), alone bool) {
	runs := rp.r.runs("Failover/kill", "lockwatch-p50-ms")
	if runs == 0 && !alone {
		return
	}
	faults, _ := rp.med("Failover/kill", "lockwatch-faults")
	m := rp.machine
	p("%s\n## Leader failover\n\n", failBegin)
	p("`BenchmarkFailover` (bench/failover, a module of its own), %d runs; medians over the runs. lockwatch %s, %s", runs, rp.rev, m.date)
	if alone {
		p(", %s, %d cores, %s, etcd server %s", m.cpu, m.cores, m.redis, moduleVersionIn("failover/go.mod", "go.etcd.io/etcd/server/v3"))
	}
	p(". Load: %s.\n\n", m.load)
	p("Three candidates per election, each a process of its own, on a private redis-server (lockwatch) and a\n")
	p("single-member etcd server started with `embed` in a process of its own (etcd), both on 127.0.0.1. Each\n")
	p("fault %s times per election in a run, the two elections taking turns. *Without a leader*: from the\n", num(faults, 0))
	p("fault (SIGKILL or SIGSTOP sent to the leader, or the resign command written to its standard input) to the\n")
	p("next leader's function starting, both instants on the parent's monotonic clock (the next leader's line\n")
	p("read from its pipe). With 20 faults a p99 is the max.\n\n")
	p("- lockwatch: `election.Run` on a `lease.Locker` with `TTL: 2s`, every other setting at its default\n")
	p("  (`SafetyMargin` TTL/10, renewal every TTL/3, `BackoffMax` 500 ms, `election.Config.Pause` 1 s),\n")
	p("  telemetry off; go-redis with `ContextTimeoutEnabled`. Resign: the leader's function returns, and Run\n")
	p("  releases the term, which grants the key to the oldest waiter over Pub/Sub.\n")
	p("- etcd: `concurrency.NewSession(client, WithTTL(2))` (etcd's TTLs are whole seconds; its minimum with the\n")
	p("  default 100 ms heartbeat and 1 s election timeout is 2 s), `Election.Campaign`, the client's keep-alive\n")
	p("  every TTL/3; the server's other settings at their defaults but `UnsafeNoFsync` (redis-server runs\n")
	p("  without persistence too). Resign: `Election.Resign`, which the next waiter's watch sees. A leader whose\n")
	p("  session ends campaigns again on a new session.\n")
	p("- Both leaders take a step of work every 10 ms, each after checking that the term is live (lockwatch:\n")
	p("  the function's context; etcd: the session's `Done`).\n\n")
	p("| fault | election | p50 (ms) | p99 (ms) | max (ms) | p50 ÷ etcd p50 |\n|---|---|--:|--:|--:|--:|\n")
	for _, c := range failCases {
		for _, e := range failElections {
			name := "Failover/" + c
			r, ok := rp.r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{name, e + "-p50-ms"}, [2]string{name, "etcd-p50-ms"})
			ok = ok && e != "etcd"
			p("| %s | %s | %s | %s | %s | %s |\n", c, failDesc(e), rp.val(name, e+"-p50-ms", 1), rp.val(name, e+"-p99-ms", 1),
				rp.most(name, e+"-max-ms", 1), cond(ok, fmt.Sprintf("%.2f×", r)))
		}
	}
	p("\n*max*: the most in any run.\n\n")
	rp.writePaused(p)
	r := failoverRun(max(runs, 1))
	p("```sh\ncd bench\n%s\n", r.shell())
	p("go run ./cmd/benchmd -only failover -failover-count %d -out ../BENCHMARKS.md   # the runs above, then this section\n```\n\n", r.times)
	if alone && rp.raw != "" {
		p("<details><summary>Raw <code>go test -bench</code> output of this section</summary>\n\n```\n%s\n```\n\n</details>\n\n", strings.TrimSpace(rp.raw))
	}
	p("%s\n\n", failEnd)
}

// writePaused writes what the paused leaders did once they ran again.
func (rp *report) writePaused(p func(string, ...any)) {
	const name = "Failover/pause"
	p("### The paused leader, once it runs again\n\n")
	p("The leader is stopped with SIGSTOP and let run again (SIGCONT) as soon as the next leader started. *Work\n")
	p("ended*: from SIGCONT to the deposed leader's work loop ending. *Late steps*: steps of work it took after\n")
	p("the pause with its term's check still passing, over all the faults of a run (and the most after one\n")
	p("pause): work beside the next leader's. lockwatch's *refused by `Lease.Err`*: those of its late steps that\n")
	p("the lease's own check of its cancel point would have refused; *late completions*: terms whose end Run\n")
	p("reported as `ErrLateCompletion`. etcd's leader learns only that its session's `Done` closed.\n\n")
	p("| election | work ended p50 (ms) | max (ms) | late steps | most after one pause | refused by `Lease.Err` | late completions |\n")
	p("|---|--:|--:|--:|--:|--:|--:|\n")
	for _, e := range failElections {
		p("| %s | %s | %s | %s | %s | %s | %s |\n", failDesc(e), rp.val(name, e+"-end-p50-ms", 1), rp.most(name, e+"-end-max-ms", 1),
			rp.val(name, e+"-late-steps", 0), rp.most(name, e+"-late-steps-max", 0), rp.val(name, e+"-refused-steps", 0),
			rp.val(name, e+"-late-completions", 0))
	}
	p("\n*max* and *most after one pause*: the most in any run; – : not measured (etcd's leader has no local check\n")
	p("of its term's validity, nor a late completion).\n\n")
}

// splice puts section in place of the part of report between begin and end,
// or before its Reproduce section when it has none.
func splice(report, section, begin, end string) string {
	if i := strings.Index(report, begin); i >= 0 {
		if j := strings.Index(report[i:], end); j >= 0 {
			rest := strings.TrimLeft(report[i+j+len(end):], "\n")
			return report[:i] + section + rest
		}
	}
	if i := strings.Index(report, "## Reproduce"); i >= 0 {
		return report[:i] + section + report[i:]
	}
	return strings.TrimRight(report, "\n") + "\n\n" + section
}

// addReproduce adds line to the command block of report's Reproduce section
// unless the block holds it.
func addReproduce(report, line string) string {
	i := strings.Index(report, "## Reproduce\n\n```sh\n")
	if i < 0 {
		return report
	}
	j := strings.Index(report[i:], "\n```\n")
	if j < 0 || strings.Contains(report[i:i+j], line) {
		return report
	}
	at := i + j + 1
	return report[:at] + line + "\n" + report[at:]
}

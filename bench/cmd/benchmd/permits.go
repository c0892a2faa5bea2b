package main

import (
	"fmt"
	"strings"
)

// The permits section sits between these markers, so that -only permits
// can replace it and leave the rest of the report as it was measured.
const (
	permBegin = "<!-- permits: benchmd -only permits replaces this section -->"
	permEnd   = "<!-- /permits -->"
)

// The semaphores of the permits benchmarks, in the order of the tables;
// their modes and waiter counts.
var (
	permImpls   = []string{"lockwatch", "redisson", "redis-semaphore"}
	permModes   = []string{"single", "parallel16"}
	permWaiters = []string{"16", "256"}
)

func permDesc(impl string) string {
	switch impl {
	case "lockwatch":
		return "lockwatch `permits` (`Wait: 1m`: queued on every permit, granted one by a release; telemetry off)"
	case "redisson":
		return "Redisson `RSemaphore`, re-implemented in Go (a counter; woken by Pub/Sub, then racing)"
	case "redis-semaphore":
		return "redis-semaphore `Semaphore`, re-implemented in Go (a sorted set; polling every 10 ms)"
	}
	return impl
}

// permitsRuns are the go test runs of the permits benchmarks: the cycle
// (timed by go test) and the hand-offs and hot keys (once per process,
// -benchtime 1x, as their sizes are fixed).
func permitsRuns(times int) []benchRun {
	return []benchRun{
		{times: times, args: []string{"test", "-run", "^$", "-bench", "^BenchmarkPermitsCycle$", "-benchmem", "-count", "1", "-timeout", "30m", "."}},
		{times: times, args: []string{"test", "-run", "^$", "-bench", "^BenchmarkPermits$", "-benchtime", "1x", "-count", "1", "-timeout", "30m", "."}},
	}
}

// writePermits writes the permits section; alone, as -only permits writes
// it, it states the revision, date and load of its own run and carries
// its raw output.
func (rp *report) writePermits(p func(string, ...any), alone bool) {
	runs := rp.permitsRunCount()
	if runs == 0 && !alone {
		return
	}
	m := rp.machine
	p("%s\n## Permits (semaphores)\n\n", permBegin)
	p("`BenchmarkPermitsCycle` and `BenchmarkPermits`, %d runs, each a `go test` process of its own; medians over the\n", runs)
	p("runs, ratios taken within each run. lockwatch %s, %s", rp.rev, m.date)
	if alone {
		p(", %s, %d cores, %s", m.cpu, m.cores, m.redis)
	}
	p(". Load: %s.\n\n", m.load)
	p("lockwatch's `permits` beside two semaphores of other ecosystems, which cannot run here (Java, Node): each\n")
	p("re-implemented in Go from its source to send the commands it sends, with its defaults (bench/semredisson_test.go\n")
	p("and bench/semzset_test.go say which). *Redisson*: a counter of free permits; a try is one script (GET, DECRBY),\n")
	p("a waiter SUBSCRIBEs and tries again whenever a release (INCRBY, PUBLISH) wakes it; its permits never expire.\n")
	p("*redis-semaphore*: a sorted set of holders scored by time; a try is one script (ZREMRANGEBYSCORE, ZCARD,\n")
	p("ZADD, PEXPIRE), a waiter tries again every 10 ms, a release is one ZREM; holders expire after 10 s unless\n")
	p("refreshed. Every go-redis client: `ContextTimeoutEnabled`, the default pool.\n\n")
	rp.writePermitsCycle(p)
	rp.writePermitsHandoff(p)
	rp.writePermitsHot(p)
	p("```sh\ncd bench\n")
	for _, r := range permitsRuns(max(runs, 1)) {
		p("%s\n", r.shell())
	}
	p("go run ./cmd/benchmd -only permits -permits-count %d -out ../BENCHMARKS.md   # the runs above, then this section\n```\n\n", max(runs, 1))
	if alone && rp.raw != "" {
		p("<details><summary>Raw <code>go test -bench</code> output of this section</summary>\n\n```\n%s\n```\n\n</details>\n\n", strings.TrimSpace(rp.raw))
	}
	p("%s\n\n", permEnd)
}

// permitsRunCount is how many runs of the permits benchmarks the results
// hold (0: none).
func (rp *report) permitsRunCount() int {
	return max(rp.r.runs("Permits/handoff/waiters=1/lockwatch", "p50-µs"), rp.r.runs("PermitsCycle/single/lockwatch", "ns/op"))
}

// splicePermits puts section in place of the permits section of report,
// or, when it has none, before the failover section, where a full report
// has it (else before Reproduce).
func splicePermits(report, section string) string {
	if !strings.Contains(report, permBegin) {
		if i := strings.Index(report, failBegin); i >= 0 {
			return report[:i] + section + report[i:]
		}
	}
	return splice(report, section, permBegin, permEnd)
}

// writePermitsCycle writes the acquire + release cycle's table.
func (rp *report) writePermitsCycle(p func(string, ...any)) {
	p("### Acquire + release, a permit free\n\n")
	p("*single*: one goroutine on a semaphore of 4 permits; *parallel16*: 16 goroutines on one semaphore of 16\n")
	p("permits (never full, but every acquire races the others for the free ones). *commands/op*: the commands the\n")
	p("client sent per cycle (a go-redis hook, each command of a pipeline counted); *client µs/op* and *Redis\n")
	p("µs/op*: CPU time per cycle of this process and of the redis-server, as in the cycle tables above.\n\n")
	p("| mode | semaphore | ns/op | ÷ lockwatch | commands/op | client µs/op | Redis µs/op | B/op | allocs/op |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, mode := range permModes {
		for _, impl := range permImpls {
			name := "PermitsCycle/" + mode + "/" + impl
			ns, ok := rp.med(name, "ns/op")
			if !ok {
				continue
			}
			r, ok := rp.ratio(name, "PermitsCycle/"+mode+"/lockwatch", "ns/op")
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mode, permDesc(impl), num(ns, 0), cond(ok && impl != "lockwatch", fmt.Sprintf("%.2f×", r)),
				rp.val(name, "cmds/op", 2), rp.val(name, "cpu-µs/op", 1), rp.val(name, "redis-µs/op", 1), rp.val(name, "B/op", 0), rp.val(name, "allocs/op", 0))
		}
	}
	p("\n")
}

// writePermitsHandoff writes the one-waiter hand-off table.
func (rp *report) writePermitsHandoff(p func(string, ...any)) {
	p("### Hand-off, one waiter (µs)\n\n")
	p("Three of the 4 permits held throughout; a holder of the fourth releases it 2 ms after taking it while one\n")
	p("waiter is blocked in a waiting acquire; holders and waiter are instances of their own, as processes. Per\n")
	p("hand-off, from the start of the release to the waiter holding the permit, 500 hand-offs per run after 20 of\n")
	p("warm-up, beside a PING sent during every hold (the round trip of the same seconds), as in the wake-up\n")
	p("section's hand-off.\n\n")
	p("| semaphore | p50 | p90 | p99 | max | PING p50 | PING p99 | p50 ÷ PING p50 | p50 ÷ lockwatch p50 | unwaited |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, impl := range permImpls {
		name := "Permits/handoff/waiters=1/" + impl
		if _, ok := rp.med(name, "p50-µs"); !ok {
			continue
		}
		overPing, ok1 := rp.r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{name, "p50-µs"}, [2]string{name, "ping-p50-µs"})
		overLw, ok2 := rp.ratio(name, "Permits/handoff/waiters=1/lockwatch", "p50-µs")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", permDesc(impl), rp.val(name, "p50-µs", 0), rp.val(name, "p90-µs", 0),
			rp.val(name, "p99-µs", 0), rp.most(name, "max-µs", 0), rp.val(name, "ping-p50-µs", 0), rp.val(name, "ping-p99-µs", 0),
			cond(ok1, fmt.Sprintf("%.2f×", overPing)), cond(ok2 && impl != "lockwatch", fmt.Sprintf("%.2f×", overLw)), rp.most(name, "unwaited", 0))
	}
	p("\n*max* and *unwaited*: the most in any run.\n\n")
}

// writePermitsHot writes the many-waiter tables.
func (rp *report) writePermitsHot(p func(string, ...any)) {
	p("### Many waiters\n\n")
	p("n + 4 goroutines of one instance on one semaphore of 4 permits (n waiting while 4 hold), each acquiring\n")
	p("(waiting), releasing at once and acquiring again, on a redis-server of its own; the wake-up section's\n")
	p("hot-key measure (a warm-up, then a window of one second). *acquisitions/s*: all; *commands/acq* and *Redis\n")
	p("calls/acq* as there. *Wake-up*: from the start of the latest release by any holder to an acquire's return:\n")
	p("with 4 holders, a lower bound of the time since the release that freed the permit. *ahead* and *passed* as\n")
	p("there; *ahead*'s mutex bound (n + 3) is not a semaphore's, and is not shown.\n\n")
	p("| waiters | semaphore | acquisitions/s | ÷ lockwatch | commands/acq | Redis calls/acq | failed |\n")
	p("|--:|---|--:|--:|--:|--:|--:|\n")
	rp.eachPermHot(func(n, impl, name string) {
		r, ok := rp.ratio(name, "Permits/hot/waiters="+n+"/lockwatch", "acq/s")
		p("| %s | %s | %s | %s | %s | %s | %s |\n", n, impl, rp.val(name, "acq/s", 0), cond(ok && impl != "lockwatch", fmt.Sprintf("%.2f×", r)),
			rp.val(name, "cmds/acq", 2), rp.val(name, "redis-calls/acq", 2), rp.most(name, "failed", 0))
	})
	p("\n| waiters | semaphore | wake-up p50 | p90 | p99 | max | PING p50 | PING p99 | p50 ÷ PING p50 | ahead p99 | ahead max | passed p99 | passed max |\n")
	p("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	rp.eachPermHot(func(n, impl, name string) {
		overPing, ok := rp.r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{name, "wake-p50-µs"}, [2]string{name, "ping-p50-µs"})
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, impl, rp.val(name, "wake-p50-µs", 0), rp.val(name, "wake-p90-µs", 0),
			rp.val(name, "wake-p99-µs", 0), rp.most(name, "wake-max-µs", 0), rp.val(name, "ping-p50-µs", 0), rp.val(name, "ping-p99-µs", 0),
			cond(ok, fmt.Sprintf("%.2f×", overPing)), rp.val(name, "ahead-p99", 0), rp.most(name, "ahead-max", 0), rp.val(name, "passed-p99", 0),
			rp.most(name, "passed-max", 0))
	})
	p("\n*failed*, *max*, *ahead max* and *passed max*: the most in any run.\n\n")
}

// eachPermHot calls f for every many-waiter case the run measured.
func (rp *report) eachPermHot(f func(waiters, impl, name string)) {
	for _, n := range permWaiters {
		for _, impl := range permImpls {
			if name := "Permits/hot/waiters=" + n + "/" + impl; rp.r.runs(name, "acq/s") > 0 {
				f(n, impl, name)
			}
		}
	}
}

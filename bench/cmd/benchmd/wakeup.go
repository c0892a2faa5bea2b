package main

import (
	"fmt"
	"strings"
)

// The wake-up section sits between these markers, so that -only wakeup can
// replace it and leave the rest of the report as it was measured.
const (
	wakeBegin = "<!-- wakeup: benchmd -only wakeup replaces this section -->"
	wakeEnd   = "<!-- /wakeup -->"
)

// The libraries of BenchmarkWakeup's hand-offs, in the order of the table.
var wakeImpls = []string{"lockwatch", "lockwatch-cluster", "rueidislock", "redislock", "redsync"}

func wakeDesc(impl string) string {
	switch impl {
	case "lockwatch":
		return "lockwatch (`Wait: 1m`: queued, granted the key by the release; telemetry off)"
	case "lockwatch-cluster":
		return "lockwatch on a 3-master Cluster (the same settings)"
	case "rueidislock":
		return "rueidislock " + moduleVersion("github.com/redis/rueidis") + " (defaults: 2 of 3 keys, woken by client-side-caching invalidations)"
	case "redislock":
		return "bsm/redislock " + moduleVersion("github.com/bsm/redislock") + " (`ExponentialBackoff(1ms, 100ms)`)"
	case "redsync":
		return "go-redsync " + moduleVersion("github.com/go-redsync/redsync/v4") + " (the same retry delays as redislock)"
	}
	return impl
}

// moduleVersion is the version of module path that the bench module
// requires (go.mod of the working directory), or "" when it is not there.
func moduleVersion(path string) string { return moduleVersionIn("go.mod", path) }

// moduleVersionIn is the version of module path that the go.mod file
// gomod requires, or "".
func moduleVersionIn(gomod, path string) string {
	for line := range strings.SplitSeq(readFile(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
			return f[1]
		} else if len(f) >= 3 && f[0] == "require" && f[1] == path {
			return f[2]
		}
	}
	return ""
}

// writeWakeup writes the wake-up section; alone, as -only wakeup writes it,
// it states the revision, date and load of its own run and carries its raw
// output.
func (rp *report) writeWakeup(p func(string, ...any), alone bool) {
	runs := 0
	for _, name := range rp.r.names {
		if strings.HasPrefix(name, "Wakeup/") {
			runs = max(runs, rp.r.runs(name, "ns/op"))
		}
	}
	if runs == 0 && !alone {
		return
	}
	m := rp.machine
	p("%s\n## Wake-up on release\n\n", wakeBegin)
	p("`BenchmarkWakeup`, %d runs, each a `go test -benchtime 1x` process of its own; medians over the runs, ratios\n", runs)
	p("taken within each run. lockwatch %s, %s", rp.rev, m.date)
	if alone {
		p(", %s, %d cores, %s", m.cpu, m.cores, m.redis)
	}
	p(". Load: %s.\n\n", m.load)
	p("*Hand-off*: one holder releases the key 2 ms after taking it while one waiter is blocked in a waiting acquire of\n")
	p("the same key; holder and waiter are instances of their own, on connections of their own, as two processes\n")
	p("would be. Per hand-off: from the start of the holder's release to the waiter holding the key, 500 hand-offs\n")
	p("per run after 20 of warm-up, on the redis-server the cycle benchmarks use (the Cluster case: 3 masters of its\n")
	p("own). During every hold a PING goes to the same server from another client: the round-trip floor of the same\n")
	p("seconds. Hand-offs whose waiter had not started its acquire 1 ms before the release are left out (unwaited).\n")
	p("Every go-redis client: `ContextTimeoutEnabled`, the default pool; rueidis: its default `ClientOption`.\n")
	p("go-redsync: `WithTries(1<<20)` and `WithRetryDelayFunc` giving redislock's delays (4, 8, 16, 32, 64, then\n")
	p("100 ms); its own default is a random 50–250 ms. TTLs 10 s (rueidislock: its default validity, 5 s).\n\n")
	var rows []spread
	for _, impl := range wakeImpls {
		name := "Wakeup/handoff/" + impl
		if p50, ok := rp.med(name, "p50-µs"); ok {
			p90, _ := rp.med(name, "p90-µs")
			p99, _ := rp.med(name, "p99-µs")
			rows = append(rows, spread{label: strings.SplitN(wakeDesc(impl), " (", 2)[0], p50: p50, p90: p90, p99: p99, max: rp.max(name, "max-µs")})
		}
	}
	if len(rows) > 0 {
		p("%s", rp.embed("wakeup-latency.svg", "hand-off latency per library: p50, p90, p99 and max",
			rangeChart("Hand-off: from the start of the release to the waiter holding the key", rows)))
	}
	p("### Goals (waiting, issue 28)\n\n")
	p("Each in every hot-key configuration below (16 and 256 waiters, one Locker and a Locker each), lockwatch beside\n")
	p("rueidislock and redislock measured in the same run; met when met in all four. Ratios per run, medians shown.\n\n")
	writeGoalTable(p, rp.wakeGoals())
	p("### Where lockwatch loses\n\n")
	p("Every figure of the tables below in which another library did better than lockwatch in the same case\n")
	p("(medians; *failed*: the most in any run). The acquisitions *ahead* and the *passes* are compared with their\n")
	p("bounds, in the tables and the goals, not between libraries: one that serves few acquisitions in the window\n")
	p("shows few of either.\n\n")
	losses := append(rp.handoffLosses(), rp.hotLosses()...)
	if len(losses) == 0 {
		p("None in this run.\n")
	}
	for _, l := range losses {
		p("- %s\n", l)
	}
	p("\n### Hand-off latency (µs)\n\n")
	p("| library | p50 | p90 | p99 | max | PING p50 | PING p99 | p50 ÷ PING p50 | p50 ÷ rueidislock p50 | unwaited |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, impl := range wakeImpls {
		name := "Wakeup/handoff/" + impl
		if _, ok := rp.med(name, "p50-µs"); !ok {
			continue
		}
		overPing, ok1 := rp.r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{name, "p50-µs"}, [2]string{name, "ping-p50-µs"})
		overRueidis, ok2 := rp.ratio(name, "Wakeup/handoff/rueidislock", "p50-µs")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wakeDesc(impl), rp.val(name, "p50-µs", 0), rp.val(name, "p90-µs", 0),
			rp.val(name, "p99-µs", 0), rp.most(name, "max-µs", 0), rp.val(name, "ping-p50-µs", 0), rp.val(name, "ping-p99-µs", 0),
			cond(ok1, fmt.Sprintf("%.2f×", overPing)), cond(ok2, fmt.Sprintf("%.2f×", overRueidis)), rp.most(name, "unwaited", 0))
	}
	p("\n*max* and *unwaited*: the most in any run.\n\n")
	rp.writeHot(p)
	r := wakeRun(max(runs, 1))
	p("\n```sh\ncd bench\nfor i in $(seq %d); do LOCKWATCH_REQUIRE_INTEGRATION=1 go %s; done\n", r.times, shellJoin(r.args))
	p("go run ./cmd/benchmd -only wakeup -wake-count %d -out ../BENCHMARKS.md   # the runs above, then this section\n```\n\n", r.times)
	if alone && rp.raw != "" {
		p("<details><summary>Raw <code>go test -bench</code> output of this section</summary>\n\n```\n%s\n```\n\n</details>\n\n", strings.TrimSpace(rp.raw))
	}
	p("%s\n\n", wakeEnd)
}

// handoffLosses lists every hand-off figure in which another library did
// better than lockwatch on the single node.
func (rp *report) handoffLosses() []string {
	var out []string
	for _, f := range []struct {
		unit  string
		worst bool
	}{{"p50-µs", false}, {"p90-µs", false}, {"p99-µs", false}, {"max-µs", true}} {
		mine, ok := rp.figure("Wakeup/handoff/lockwatch", f.unit, f.worst)
		if !ok {
			continue
		}
		for _, impl := range wakeImpls[2:] {
			if theirs, ok := rp.figure("Wakeup/handoff/"+impl, f.unit, f.worst); ok && theirs < mine {
				out = append(out, fmt.Sprintf("hand-off, one waiter: %s %s µs, %s %s µs", strings.TrimSuffix(f.unit, "-µs"), num(mine, 0), impl, num(theirs, 0)))
			}
		}
	}
	return out
}

// spliceSection puts section in place of the wake-up section of report, or
// before its Reproduce section when it has none.
func spliceSection(report, section string) string { return splice(report, section, wakeBegin, wakeEnd) }

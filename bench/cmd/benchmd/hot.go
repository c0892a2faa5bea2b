package main

import (
	"fmt"
	"strings"
)

// hotCase is one hot-key configuration of BenchmarkWakeup.
type hotCase struct {
	layout  string
	waiters string
}

var hotCases = []hotCase{{"shared", "16"}, {"own", "16"}, {"shared", "256"}, {"own", "256"}}

// hotImpls are the libraries of the hot-key cases, in the order of the
// tables; lockwatch first, the one the others are compared with.
var hotImpls = []string{"lockwatch", "rueidislock", "redislock", "redsync"}

func hotName(c hotCase, impl string) string {
	return "Wakeup/hot/" + c.layout + "/waiters=" + c.waiters + "/" + impl
}

func (c hotCase) String() string { return c.waiters + " waiters, " + layoutDesc(c.layout) }

func layoutDesc(layout string) string {
	if layout == "own" {
		return "a Locker each"
	}
	return "one Locker"
}

// hotGoal is one of issue 28's waiting goals, to be met in every hot-key
// configuration: figure returns lockwatch's figure in c and whether it
// meets the goal, or ok false when the run lacks it.
type hotGoal struct {
	text   string
	show   func(v float64) string
	figure func(c hotCase) (v float64, met, ok bool)
}

// hotGoals are issue 28's goals for waiting, each over every hot-key
// configuration.
func (rp *report) hotGoals() []hotGoal {
	lw := func(c hotCase) string { return hotName(c, "lockwatch") }
	times := func(v float64) string { return fmt.Sprintf("%.2f×", v) }
	return []hotGoal{
		{"wake-up p50 ≤ 0.6× rueidislock's", times, func(c hotCase) (float64, bool, bool) {
			x, ok := rp.ratio(lw(c), hotName(c, "rueidislock"), "wake-p50-µs")
			return x, x <= 0.6, ok
		}},
		{"wake-up p50 ≤ 1.3× a PING p50 of the same seconds", times, func(c hotCase) (float64, bool, bool) {
			x, ok := rp.r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{lw(c), "wake-p50-µs"}, [2]string{lw(c), "ping-p50-µs"})
			return x, x <= 1.3, ok
		}},
		{"wake-up p99 ≤ 2 ms", func(v float64) string { return num(v, 0) + " µs" }, func(c hotCase) (float64, bool, bool) {
			v, ok := rp.med(lw(c), "wake-p99-µs")
			return v, v <= 2000, ok
		}},
		{"hand-offs per second ≥ 1.2× rueidislock's", times, func(c hotCase) (float64, bool, bool) {
			x, ok := rp.ratio(lw(c), hotName(c, "rueidislock"), "handoffs/s")
			return x, x >= 1.2, ok
		}},
		{"Redis commands per acquisition ≤ 3", func(v float64) string { return num(v, 2) }, func(c hotCase) (float64, bool, bool) {
			v, ok := rp.med(lw(c), "cmds/acq")
			return v, v <= 3, ok
		}},
		{"served in arrival order: no waiter passed twice by the same other waiter (passed-max ≤ 1, most in any run)", func(v float64) string { return num(v, 0) }, func(c hotCase) (float64, bool, bool) {
			v := rp.max(lw(c), "passed-max")
			return v, v <= 1, rp.r.runs(lw(c), "passed-max") > 0
		}},
	}
}

// wakeGoals are issue 28's waiting goals and how this run did: one row
// per goal, its figure in every hot-key configuration, met when met in
// all of them.
func (rp *report) wakeGoals() []goal {
	var goals []goal
	for _, g := range rp.hotGoals() {
		var cells []string
		met, n := 0, 0
		for _, c := range hotCases {
			v, good, ok := g.figure(c)
			switch {
			case !ok:
				cells = append(cells, c.String()+": not measured")
				continue
			case good:
				met++
				cells = append(cells, c.String()+": "+g.show(v))
			default:
				cells = append(cells, c.String()+": "+g.show(v)+" (not met)")
			}
			n++
		}
		goals = append(goals, goal{text: g.text, known: n > 0, met: met == len(hotCases),
			result: strings.Join(cells, "; ") + fmt.Sprintf(" — %d of %d met", met, len(hotCases))})
	}
	return goals
}

// writeHot writes the hot-key tables.
func (rp *report) writeHot(p func(string, ...any)) {
	p("### One hot key\n\n")
	p("n goroutines on one key, each acquiring (waiting as above), releasing at once and acquiring again, on a\n")
	p("redis-server of its own: a warm-up until every waiter has held the key once (at most 2 s), then a window of one\n")
	p("second (two seconds for 256 waiters with a Locker each, whose hand-offs are fewer). *one Locker*: all waiters\n")
	p("on one instance (one process); *a Locker each*: an instance and its connections per waiter (n processes). Every\n")
	p("figure is from the window alone. *hand-offs/s* counts the acquisitions by another waiter than the last\n")
	p("holder, *acquisitions/s* all of them (a polling library's releasing waiter takes the key straight back: many\n")
	p("acquisitions, few hand-offs). *commands/acq*: the commands the clients sent (a go-redis hook, a wrapper of the\n")
	p("rueidis client, plus the Pub/Sub subscribe commands, which bypass go-redis's hooks, as the server counted\n")
	p("them) per acquisition: the goal's figure. *Redis calls/acq*: every command Redis ran (INFO commandstats\n")
	p("deltas, the PINGs below left out), those the scripts call included. *failed*: acquires that returned an error\n")
	p("under the load (the waiter waits again), most in any run.\n\n")
	p("| waiters | layout | library | acquisitions/s | hand-offs/s | hand-offs ÷ rueidislock | commands/acq | Redis calls/acq | failed |\n")
	p("|--:|---|---|--:|--:|--:|--:|--:|--:|\n")
	rp.eachHot(func(c hotCase, impl, name string) {
		x, ok := rp.ratio(name, hotName(c, "rueidislock"), "handoffs/s")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.waiters, layoutDesc(c.layout), impl, rp.val(name, "acq/s", 0),
			rp.val(name, "handoffs/s", 0), cond(ok, fmt.Sprintf("%.2f×", x)), rp.val(name, "cmds/acq", 2),
			rp.val(name, "redis-calls/acq", 2), rp.most(name, "failed", 0))
	})
	p("\n*Wake-up*: per hand-off to another waiter, from the instant the previous holder called its release to the\n")
	p("instant the next holder's acquire returned (µs; a waiter taking the key back from itself is not a hand-off,\n")
	p("so a polling library's figures are those of the polls that came in time). *PING*: a PING every millisecond\n")
	p("from a client of its own to the same server through the window: the round trip of the same seconds.\n\n")
	p("*ahead*: per acquire, the acquisitions by other waiters between the start of its call and its return (an\n")
	p("acquire still waiting when the window ends: those until then), p99 and the most in any run, beside its\n")
	p("*bound*, waiters − 1. Served in arrival order, a waiter waits for each other one at most once after it\n")
	p("arrives, but it arrives when its enqueue reaches Redis, so the acquisitions during that round trip come on\n")
	p("top: *ahead max* can exceed the bound a little. *passed*: per acquire, the most acquisitions by any one other\n")
	p("waiter during its wait, less one (the times that waiter went round and was served again ahead of it), p99 and\n")
	p("the most in any run. In arrival order it is 0, or 1 when the other's re-queue and this enqueue were in flight\n")
	p("together; a polling library's grows with the wait.\n\n")
	p("| waiters | layout | library | wake-up p50 | p90 | p99 | max | PING p50 | PING p99 | p50 ÷ PING p50 | p50 ÷ rueidislock p50 | ahead p99 | ahead max | bound | passed p99 | passed max |\n")
	p("|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	rp.eachHot(func(c hotCase, impl, name string) {
		overPing, ok1 := rp.r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{name, "wake-p50-µs"}, [2]string{name, "ping-p50-µs"})
		overRueidis, ok2 := rp.ratio(name, hotName(c, "rueidislock"), "wake-p50-µs")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.waiters, layoutDesc(c.layout), impl,
			rp.val(name, "wake-p50-µs", 0), rp.val(name, "wake-p90-µs", 0), rp.val(name, "wake-p99-µs", 0), rp.most(name, "wake-max-µs", 0),
			rp.val(name, "ping-p50-µs", 0), rp.val(name, "ping-p99-µs", 0), cond(ok1, fmt.Sprintf("%.2f×", overPing)),
			cond(ok2, fmt.Sprintf("%.2f×", overRueidis)), rp.val(name, "ahead-p99", 0), rp.most(name, "ahead-max", 0), rp.val(name, "ahead-bound", 0),
			rp.val(name, "passed-p99", 0), rp.most(name, "passed-max", 0))
	})
	p("\n*wake-up max*: the most in any run.\n\n")
	rp.writeHotChart(p)
}

// eachHot calls f for every hot-key case of the run, in table order.
func (rp *report) eachHot(f func(c hotCase, impl, name string)) {
	for _, c := range hotCases {
		for _, impl := range hotImpls {
			if name := hotName(c, impl); rp.r.runs(name, "acq/s") > 0 {
				f(c, impl, name)
			}
		}
	}
}

// writeHotChart draws the hot-key wake-ups of every case.
func (rp *report) writeHotChart(p func(string, ...any)) {
	var rows []spread
	rp.eachHot(func(c hotCase, impl, name string) {
		if p50, ok := rp.med(name, "wake-p50-µs"); ok {
			p90, _ := rp.med(name, "wake-p90-µs")
			p99, _ := rp.med(name, "wake-p99-µs")
			rows = append(rows, spread{label: c.waiters + ", " + layoutDesc(c.layout) + ": " + impl, p50: p50, p90: p90, p99: p99,
				max: rp.max(name, "wake-max-µs")})
		}
	})
	if len(rows) > 0 {
		p("%s", rp.embed("wakeup-hot.svg", "hot-key wake-up per configuration and library: p50, p90, p99 and max",
			rangeChart("Hot key: from the start of the holder's release to the next holder's acquire returning", rows)))
	}
}

// hotFigures are the figures the losses compare, and which way is better;
// worst: the most in any run, as the tables give it, not the median. The
// acquisitions ahead and the passes are compared with their bounds (the
// tables and the goals), not between libraries: a library that serves few
// acquisitions in the window shows few ahead and few passes.
var hotFigures = []struct {
	unit, desc           string
	lowerIsBetter, worst bool
	prec                 int
}{
	{"wake-p50-µs", "wake-up p50 (µs)", true, false, 0},
	{"wake-p99-µs", "wake-up p99 (µs)", true, false, 0},
	{"handoffs/s", "hand-offs/s", false, false, 0},
	{"acq/s", "acquisitions/s", false, false, 0},
	{"cmds/acq", "commands/acq", true, false, 2},
	{"redis-calls/acq", "Redis calls/acq", true, false, 2},
	{"failed", "failed", true, true, 0},
}

// figure is name's value in unit: the median, or with worst the most in
// any run.
func (rp *report) figure(name, unit string, worst bool) (float64, bool) {
	if worst {
		return rp.max(name, unit), rp.r.runs(name, unit) > 0
	}
	return rp.med(name, unit)
}

// hotLosses lists every hot-key figure in which another library did
// better than lockwatch in the same configuration.
func (rp *report) hotLosses() []string {
	var out []string
	for _, c := range hotCases {
		for _, f := range hotFigures {
			mine, ok := rp.figure(hotName(c, "lockwatch"), f.unit, f.worst)
			if !ok {
				continue
			}
			for _, impl := range hotImpls[1:] {
				theirs, ok := rp.figure(hotName(c, impl), f.unit, f.worst)
				if ok && (f.lowerIsBetter && theirs < mine || !f.lowerIsBetter && theirs > mine) {
					out = append(out, fmt.Sprintf("%s: %s %s, %s %s", c, f.desc, num(mine, f.prec), impl, num(theirs, f.prec)))
				}
			}
		}
	}
	return out
}

// Command benchmd runs lockwatch's comparative benchmarks (the bench module)
// and writes BENCHMARKS.md: the machine, the goals of the performance work
// and whether this run met them, and tables of medians and ratios.
//
// Run from the bench directory (make bench does):
//
//	go run ./cmd/benchmd -out ../BENCHMARKS.md
//
// The charts (SVG) go to -charts, bench/charts by default, and the report
// embeds them. -in reads saved `go test -bench` output instead of running the
// benchmarks, to regenerate the report from an earlier run. -only wakeup
// runs only the wake-up benchmark and replaces only the wake-up section of
// the existing report, which states its own revision, date and load. -only
// failover does the same with the failover benchmark (bench/failover, a
// module of its own, run with GOWORK=off) and its section, and adds its
// command to the Reproduce block; -only permits with the permits
// benchmarks (BenchmarkPermitsCycle, BenchmarkPermits) and theirs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "BENCHMARKS.md", "where to write the report")
	count := flag.Int("count", 5, "runs of the cycle and HTTP benchmarks (medians are taken over them)")
	slowCount := flag.Int("slow-count", 3, "runs of the scale and loss-detection benchmarks, which take seconds each")
	wakeCount := flag.Int("wake-count", 3, "runs of the wake-up benchmark, about a minute each")
	failoverCount := flag.Int("failover-count", 1, "runs of the failover benchmark, about eight minutes each")
	permitsCount := flag.Int("permits-count", 3, "runs of the permits benchmarks, about a minute each")
	only := flag.String("only", "", `"wakeup", "permits" or "failover": run only that benchmark and replace only its section of -out`)
	in := flag.String("in", "", "comma-separated files of saved `go test -bench` output to report on instead of running")
	raw := flag.String("raw", "", "also save the raw benchmark output to this file")
	goCmd := flag.String("go", "go", "the go command")
	rev := flag.String("rev", "", "the lockwatch revision measured (default: git describe --always --dirty)")
	charts := flag.String("charts", "charts", "where to write the report's SVG charts (embedded by a path relative to -out)")
	flag.Parse()
	if *rev == "" {
		*rev = output("git", "describe", "--always", "--dirty")
	}
	if *only != "" && *only != "wakeup" && *only != "permits" && *only != "failover" {
		fmt.Fprintf(os.Stderr, "benchmd: -only %q: the sections are wakeup, permits and failover\n", *only)
		os.Exit(2)
	}
	counts := runCounts{cycle: *count, slow: *slowCount, wake: *wakeCount, permits: *permitsCount, failover: *failoverCount}
	if err := run(*out, *in, *raw, *goCmd, *rev, *only, *charts, counts); err != nil {
		fmt.Fprintln(os.Stderr, "benchmd:", err)
		os.Exit(1)
	}
}

// runCounts are how many times each group of benchmarks runs.
type runCounts struct{ cycle, slow, wake, permits, failover int }

func run(out, in, raw, goCmd, rev, only, charts string, n runCounts) error {
	// Each run is a go test process of its own, with -count 1: with
	// -count n, go test repeats every sub-benchmark n times in a row, so
	// the floor and the implementation compared with it would be measured
	// minutes apart on a machine whose speed drifts; this way every run
	// measures them all within seconds, against its own redis-server, and the
	// report takes each ratio within a run.
	wake, perm, fail := []benchRun{wakeRun(n.wake)}, permitsRuns(n.permits), []benchRun{failoverRun(n.failover)}
	runs := []benchRun{
		{times: n.cycle, args: []string{"test", "-run", "^$", "-bench", "^Benchmark(Cycle|Clients|HTTP)$", "-benchmem", "-count", "1", "-timeout", "30m", "."}},
		{times: n.slow, args: []string{"test", "-run", "^$", "-bench", "^Benchmark(Scale|LossDetection|RedisInstructions)$", "-benchtime", "1x", "-benchmem",
			"-count", "1", "-timeout", "30m", "."}},
	}
	runs = append(append(append(runs, wake...), perm...), fail...)
	switch only {
	case "wakeup":
		runs = wake
	case "permits":
		runs = perm
	case "failover":
		runs = fail
	}
	var cmds []string
	for _, r := range runs {
		cmds = append(cmds, r.shell())
	}
	var text bytes.Buffer
	measured := time.Now()
	var ld load
	if in != "" {
		for _, f := range strings.Split(in, ",") {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			text.Write(b)
			if fi, err := os.Stat(f); err == nil {
				measured = fi.ModTime() // when that run ended
			}
		}
	} else {
		endLoad := sampleLoad()
		for _, r := range runs {
			for range r.times {
				cmd := exec.Command(goCmd, r.args...)
				cmd.Dir = r.dir
				cmd.Env = append(append(os.Environ(), "LOCKWATCH_REQUIRE_INTEGRATION=1"), r.env...)
				cmd.Stdout = io.MultiWriter(&text, os.Stdout)
				cmd.Stderr = os.Stderr
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("%s %s: %w", goCmd, shellJoin(r.args), err)
				}
			}
		}
		ld = endLoad()
	}
	if raw != "" {
		if err := os.WriteFile(raw, text.Bytes(), 0o644); err != nil {
			return err
		}
	}
	res, err := parse(bytes.NewReader(text.Bytes()))
	if err != nil {
		return err
	}
	if len(res.names) == 0 {
		return fmt.Errorf("no benchmark results in the output")
	}
	m := describeMachine(goCmd, measured)
	m.load = ld
	rp := &report{r: res, machine: m, rev: rev, cmds: cmds, raw: text.String()}
	if rp.charts, err = chartsFor(out, charts); err != nil {
		return err
	}
	var md bytes.Buffer
	if only != "" {
		old, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		s, err := rp.onlySection(only, string(old))
		if err != nil {
			return err
		}
		md.WriteString(s)
	} else if err := rp.write(&md); err != nil {
		return err
	}
	return os.WriteFile(out, md.Bytes(), 0o644)
}

// onlySection returns report old with the section of only (wakeup,
// permits or failover) written anew from rp.
func (rp *report) onlySection(only, old string) (string, error) {
	var section strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&section, format, args...) }
	switch only {
	case "wakeup":
		rp.writeWakeup(p, true)
		return spliceSection(old, section.String()), rp.err
	case "permits":
		rp.writePermits(p, true)
		s := splicePermits(old, section.String())
		for _, r := range permitsRuns(max(rp.permitsRunCount(), 1)) {
			s = addReproduce(s, r.shell())
		}
		return s, rp.err
	}
	rp.writeFailover(p, true)
	return addReproduce(splice(old, section.String(), failBegin, failEnd), failoverRun(1).shell()), rp.err
}

// chartsFor returns where the charts go and how a report written to out
// links them.
func chartsFor(out, dir string) (chart, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return chart{}, err
	}
	outDir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return chart{}, err
	}
	link, err := filepath.Rel(outDir, abs)
	if err != nil {
		return chart{}, err
	}
	return chart{dir: dir, link: link}, nil
}

// benchRun is one go test command and how many times it runs: in dir
// (relative to bench/, default bench/ itself), with env added to benchmd's
// environment.
type benchRun struct {
	times int
	args  []string
	dir   string
	env   []string
}

// shell is r as a command for a POSIX shell in bench/.
func (r benchRun) shell() string {
	cmd := strings.Join(append(slices.Clone(r.env), "LOCKWATCH_REQUIRE_INTEGRATION=1 go "+shellJoin(r.args)), " ")
	if r.dir != "" {
		cmd = "(cd " + r.dir + " && " + cmd + ")"
	}
	return fmt.Sprintf("for i in $(seq %d); do %s; done", r.times, cmd)
}

// wakeRun is the go test run of the wake-up benchmark: once per process
// (-benchtime 1x), as its hand-offs and hot-key windows have fixed sizes.
func wakeRun(times int) benchRun {
	return benchRun{times: times, args: []string{"test", "-run", "^$", "-bench", "^BenchmarkWakeup$", "-benchtime", "1x", "-count", "1", "-timeout", "30m", "."}}
}

// shellJoin quotes args for a POSIX shell where needed.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " $^|()'\"*?\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

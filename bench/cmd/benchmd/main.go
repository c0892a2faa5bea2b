// Command benchmd runs lockwatch's comparative benchmarks (the bench module)
// and writes BENCHMARKS.md: the machine, the goals of the performance work
// and whether this run met them, and tables of medians and ratios.
//
// Run from the bench directory (make bench does):
//
//	go run ./cmd/benchmd -out ../BENCHMARKS.md
//
// -in reads saved `go test -bench` output instead of running the
// benchmarks, to regenerate the report from an earlier run.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("out", "BENCHMARKS.md", "where to write the report")
	count := flag.Int("count", 5, "runs of the cycle and HTTP benchmarks (medians are taken over them)")
	slowCount := flag.Int("slow-count", 3, "runs of the scale and loss-detection benchmarks, which take seconds each")
	in := flag.String("in", "", "comma-separated files of saved `go test -bench` output to report on instead of running")
	raw := flag.String("raw", "", "also save the raw benchmark output to this file")
	goCmd := flag.String("go", "go", "the go command")
	flag.Parse()
	if err := run(*out, *in, *raw, *goCmd, *count, *slowCount); err != nil {
		fmt.Fprintln(os.Stderr, "benchmd:", err)
		os.Exit(1)
	}
}

func run(out, in, raw, goCmd string, count, slowCount int) error {
	runs := [][]string{
		{"test", "-run", "^$", "-bench", "^Benchmark(Cycle|HTTP)$", "-benchmem", "-count", strconv.Itoa(count), "-timeout", "60m", "."},
		{"test", "-run", "^$", "-bench", "^Benchmark(Scale|LossDetection)$", "-benchtime", "1x", "-benchmem",
			"-count", strconv.Itoa(slowCount), "-timeout", "60m", "."},
	}
	var cmds []string
	for _, args := range runs {
		cmds = append(cmds, "cd bench && LOCKWATCH_REQUIRE_INTEGRATION=1 go "+shellJoin(args))
	}
	var text bytes.Buffer
	if in != "" {
		for _, f := range strings.Split(in, ",") {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			text.Write(b)
		}
	} else {
		for _, args := range runs {
			cmd := exec.Command(goCmd, args...)
			cmd.Env = append(os.Environ(), "LOCKWATCH_REQUIRE_INTEGRATION=1")
			cmd.Stdout = io.MultiWriter(&text, os.Stdout)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s %s: %w", goCmd, shellJoin(args), err)
			}
		}
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
	rp := &report{r: res, machine: describeMachine(goCmd), cmds: cmds, raw: text.String()}
	var md bytes.Buffer
	if err := rp.write(&md); err != nil {
		return err
	}
	return os.WriteFile(out, md.Bytes(), 0o644)
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

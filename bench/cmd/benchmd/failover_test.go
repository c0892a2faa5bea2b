package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const failSample = `BenchmarkFailover/kill-2  1  12124031015 ns/op  2604 etcd-max-ms  1803 etcd-p50-ms  2604 etcd-p99-ms  2.000 etcd-faults  1901 lockwatch-max-ms  1657 lockwatch-p50-ms  1901 lockwatch-p99-ms  2.000 lockwatch-faults
BenchmarkFailover/resign-2  1  4094264426 ns/op  3.220 etcd-max-ms  2.640 etcd-p50-ms  3.220 etcd-p99-ms  2.000 etcd-faults  32.90 lockwatch-max-ms  2.658 lockwatch-p50-ms  32.90 lockwatch-p99-ms  2.000 lockwatch-faults
BenchmarkFailover/pause-2  1  10588178932 ns/op  0.8583 etcd-end-max-ms  0.2686 etcd-end-p50-ms  1.000 etcd-late-steps  1.000 etcd-late-steps-max  1629 etcd-max-ms  1496 etcd-p50-ms  1629 etcd-p99-ms  2.000 etcd-faults  54.48 lockwatch-end-max-ms  0.3850 lockwatch-end-p50-ms  2.000 lockwatch-late-completions  1.000 lockwatch-late-steps  1.000 lockwatch-late-steps-max  1990 lockwatch-max-ms  1412 lockwatch-p50-ms  1990 lockwatch-p99-ms  1.000 lockwatch-refused-steps  2.000 lockwatch-faults
`

func failSection(t *testing.T, out string, alone bool) string {
	t.Helper()
	r, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	rp := &report{r: r, rev: "abc", raw: out}
	var md strings.Builder
	rp.writeFailover(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, alone)
	return md.String()
}

func TestFailoverTablesShowEveryCaseAndElection(t *testing.T) {
	out := failSection(t, failSample, false)
	assert.True(t, strings.HasPrefix(out, failBegin), out)
	assert.True(t, strings.HasSuffix(out, failEnd+"\n\n"), out)
	assert.Contains(t, out, "`BenchmarkFailover` (bench/failover, a module of its own), 1 runs;")
	assert.Contains(t, out, "Each\nfault 2 times per election")
	assert.Contains(t, out, "| kill | lockwatch `election.Run` | 1,657.0 | 1,901.0 | 1,901.0 | 0.92× |\n")
	assert.Contains(t, out, "| resign | lockwatch `election.Run` | 2.7 | 32.9 | 32.9 | 1.01× |\n")
	assert.Contains(t, out, "| pause | etcd `concurrency.Election` ")
	assert.Contains(t, out, " | 1,496.0 | 1,629.0 | 1,629.0 | – |\n", "etcd is not divided by itself")
	assert.Contains(t, out, "| lockwatch `election.Run` | 0.4 | 54.5 | 1 | 1 | 1 | 2 |\n")
	assert.Contains(t, out, " | 0.3 | 0.9 | 1 | 1 | – | – |\n", "etcd has no refused steps nor late completions")
	assert.Contains(t, out, "(cd failover && GOWORK=off LOCKWATCH_REQUIRE_INTEGRATION=1 go test -run '^$' -bench '^BenchmarkFailover$'")
	assert.NotContains(t, out, "<details>", "the full report carries the raw output once, at its end")
	assert.Contains(t, failSection(t, failSample, true), "<details>", "alone, the section carries its raw output")
	assert.Empty(t, failSection(t, wakeSample, false), "a run without the benchmark writes no section")
}

func TestFailoverSplicesIntoTheReport(t *testing.T) {
	section := failBegin + "\n## Leader failover\n\nnew\n\n" + failEnd + "\n\n"
	report := "# r\n\n" + wakeBegin + "\nw\n" + wakeEnd + "\n\n## Reproduce\n\n```sh\nmake bench\ncd bench\nfor x; done\n```\n\nmore\n"
	fresh := splice(report, section, failBegin, failEnd)
	assert.Equal(t, "# r\n\n"+wakeBegin+"\nw\n"+wakeEnd+"\n\n"+section+"## Reproduce", fresh[:strings.Index(fresh, "## Reproduce")+12])
	old := strings.Replace(fresh, "new", "old figures", 1)
	assert.Equal(t, fresh, splice(old, section, failBegin, failEnd), "the section is replaced, the rest kept")
	assert.Equal(t, fresh, spliceSection(fresh, wakeBegin+"\nw\n"+wakeEnd+"\n\n"), "the wake-up section is its own")

	line := failoverRun(1).shell()
	added := addReproduce(fresh, line)
	assert.Contains(t, added, "for x; done\n"+line+"\n```\n\nmore\n")
	assert.Equal(t, added, addReproduce(added, line), "added once")
	assert.Equal(t, "# r\n", addReproduce("# r\n", line), "no Reproduce block, nothing added")
}

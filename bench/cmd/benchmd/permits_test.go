package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const permSample = `BenchmarkPermitsCycle/single/lockwatch-2  200  1815504 ns/op  3.000 cmds/op  279.9 cpu-µs/op  176.1 redis-µs/op  7242 B/op  98 allocs/op
BenchmarkPermitsCycle/parallel16/lockwatch-2  200  397637 ns/op  3.740 cmds/op  267.1 cpu-µs/op  116.0 redis-µs/op  25705 B/op  210 allocs/op
BenchmarkPermitsCycle/single/redisson-2  200  129296 ns/op  2.000 cmds/op  84.34 cpu-µs/op  45.70 redis-µs/op  1248 B/op  30 allocs/op
BenchmarkPermitsCycle/single/redis-semaphore-2  200  119703 ns/op  2.000 cmds/op  74.38 cpu-µs/op  45.95 redis-µs/op  1272 B/op  29 allocs/op
BenchmarkPermits/handoff/waiters=1/lockwatch-2  1  2860407620 ns/op  500.0 handoffs  9972 max-µs  355.1 p50-µs  1053 p90-µs  4959 p99-µs  199.9 ping-p50-µs  5487 ping-p99-µs  1.000 unwaited
BenchmarkPermits/handoff/waiters=1/redisson-2  1  1848502137 ns/op  500.0 handoffs  6917 max-µs  419.6 p50-µs  605.3 p90-µs  942.7 p99-µs  165.8 ping-p50-µs  455.9 ping-p99-µs  0 unwaited
BenchmarkPermits/handoff/waiters=1/redis-semaphore-2  1  6362451124 ns/op  500.0 handoffs  52377 max-µs  8684 p50-µs  10442 p90-µs  17974 p99-µs  145.2 ping-p50-µs  1450 ping-p99-µs  0 unwaited
BenchmarkPermits/hot/waiters=16/lockwatch-2  1  1178277219 ns/op  1079 acq/s  19.00 ahead-bound  28.00 ahead-max  25.00 ahead-p99  8.971 cmds/acq  0 failed  1079 handoffs/s  1.000 passed-max  1.000 passed-p99  873.6 ping-p50-µs  3545 ping-p99-µs  106.3 redis-calls/acq  6520 wake-max-µs  878.6 wake-p50-µs  1869 wake-p90-µs  3528 wake-p99-µs
BenchmarkPermits/hot/waiters=16/redisson-2  1  1167320048 ns/op  3478 acq/s  19.00 ahead-bound  327.0 ahead-max  113.0 ahead-p99  3.924 cmds/acq  0 failed  3437 handoffs/s  25.00 passed-max  11.00 passed-p99  616.1 ping-p50-µs  8898 ping-p99-µs  9.915 redis-calls/acq  68621 wake-max-µs  60.59 wake-p50-µs  502.5 wake-p90-µs  3953 wake-p99-µs
BenchmarkPermits/hot/waiters=256/redis-semaphore-2  1  3247884400 ns/op  2801 acq/s  259.0 ahead-bound  2769 ahead-max  1705 ahead-p99  8.800 cmds/acq  0 failed  2759 handoffs/s  33.00 passed-max  29.00 passed-p99  642.2 ping-p50-µs  4178 ping-p99-µs  26.52 redis-calls/acq  11255 wake-max-µs  76.46 wake-p50-µs  939.4 wake-p90-µs  3567 wake-p99-µs
`

func permSection(t *testing.T, out string, alone bool) string {
	t.Helper()
	r, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	rp := &report{r: r, rev: "abc", raw: out}
	var md strings.Builder
	rp.writePermits(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, alone)
	return md.String()
}

func TestPermitsTablesShowEveryCaseAndSemaphore(t *testing.T) {
	out := permSection(t, permSample, false)
	assert.True(t, strings.HasPrefix(out, permBegin), out)
	assert.True(t, strings.HasSuffix(out, permEnd+"\n\n"), out)
	assert.Contains(t, out, "`BenchmarkPermitsCycle` and `BenchmarkPermits`, 1 runs,")
	assert.Contains(t, out, "| single | "+permDesc("lockwatch")+" | 1,815,504 | – | 3.00 | 279.9 | 176.1 | 7,242 | 98 |\n", "lockwatch is not divided by itself")
	assert.Contains(t, out, "| single | "+permDesc("redisson")+" | 129,296 | 0.07× | 2.00 | 84.3 | 45.7 | 1,248 | 30 |\n")
	assert.Contains(t, out, "| parallel16 | "+permDesc("lockwatch")+" | 397,637 |")
	assert.NotContains(t, out, "| parallel16 | "+permDesc("redisson"), "a case the run lacks has no row")
	assert.Contains(t, out, "| "+permDesc("lockwatch")+" | 355 | 1,053 | 4,959 | 9,972 | 200 | 5,487 | 1.78× | – | 1 |\n")
	assert.Contains(t, out, "| "+permDesc("redis-semaphore")+" | 8,684 | 10,442 | 17,974 | 52,377 | 145 | 1,450 | 59.81× | 24.46× | 0 |\n")
	assert.Contains(t, out, "| 16 | redisson | 3,478 | 3.22× | 3.92 | 9.91 | 0 |\n")
	assert.Contains(t, out, "| 256 | redis-semaphore | 2,801 | – | 8.80 | 26.52 | 0 |\n", "no lockwatch at 256 in the sample: no ratio")
	assert.Contains(t, out, "| 16 | lockwatch | 879 | 1,869 | 3,528 | 6,520 | 874 | 3,545 | 1.01× | 25 | 28 | 1 | 1 |\n")
	assert.Contains(t, out, "for i in $(seq 1); do LOCKWATCH_REQUIRE_INTEGRATION=1 go test -run '^$' -bench '^BenchmarkPermitsCycle$' -benchmem")
	assert.Contains(t, out, "-bench '^BenchmarkPermits$' -benchtime 1x")
	assert.Contains(t, out, "go run ./cmd/benchmd -only permits -permits-count 1 ")
	assert.NotContains(t, out, "<details>", "the full report carries the raw output once, at its end")
	assert.NotContains(t, out, "Inf")
	assert.Contains(t, permSection(t, permSample, true), "<details>", "alone, the section carries its raw output")
	assert.Empty(t, permSection(t, wakeSample, false), "a run without the benchmarks writes no section")
}

func TestPermitsSplicesIntoTheReport(t *testing.T) {
	section := permBegin + "\n## Permits (semaphores)\n\nnew\n\n" + permEnd + "\n\n"
	fail := failBegin + "\nf\n" + failEnd + "\n\n"
	doc := "# r\n\n" + wakeBegin + "\nw\n" + wakeEnd + "\n\n" + fail + "## Reproduce\n\n```sh\ncd bench\nfor x; done\n```\n"
	fresh := splicePermits(doc, section)
	assert.Equal(t, "# r\n\n"+wakeBegin+"\nw\n"+wakeEnd+"\n\n"+section+fail+"## Reproduce", fresh[:strings.Index(fresh, "## Reproduce")+12],
		"between the wake-up and the failover sections, as a full report has it")
	old := strings.Replace(fresh, "new", "old figures", 1)
	assert.Equal(t, fresh, splicePermits(old, section), "the section is replaced, the rest kept")
	assert.Equal(t, "# r\n\n"+section+"## Reproduce\n", splicePermits("# r\n\n## Reproduce\n", section), "no failover section: before Reproduce")

	r, err := parse(strings.NewReader(permSample))
	require.NoError(t, err)
	rp := &report{r: r, rev: "abc", raw: permSample}
	got, err := rp.onlySection("permits", doc)
	require.NoError(t, err)
	runs := permitsRuns(1)
	assert.Contains(t, got, "for x; done\n"+runs[0].shell()+"\n"+runs[1].shell()+"\n```\n", "both runs added to Reproduce")
	assert.Contains(t, got, wakeEnd+"\n\n"+permBegin)
	assert.Contains(t, got, permEnd+"\n\n"+failBegin)
}

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const wakeSample = `BenchmarkWakeup/handoff/lockwatch-2  1  1576293293 ns/op  500.0 handoffs  9601 max-µs  274.1 p50-µs  375.2 p90-µs  472.7 p99-µs  90.02 ping-p50-µs  248.0 ping-p99-µs  0 unwaited
BenchmarkWakeup/handoff/rueidislock-2  1  1641709615 ns/op  500.0 handoffs  6344 max-µs  307.7 p50-µs  1196 p90-µs  4122 p99-µs  69.64 ping-p50-µs  977.9 ping-p99-µs  2 unwaited
BenchmarkWakeup/hot/shared/waiters=16/lockwatch-2  1  1050483936 ns/op  2595 acq/s  15.00 ahead-bound  16.00 ahead-max  15.00 ahead-p99  1.000 passed-max  0 passed-p99  2.000 cmds/acq  0 failed  2595 handoffs/s  269.4 ping-p50-µs  1183 ping-p99-µs  28.80 redis-calls/acq  6128 wake-max-µs  325.8 wake-p50-µs  573.1 wake-p90-µs  1282 wake-p99-µs
BenchmarkWakeup/hot/shared/waiters=16/rueidislock-2  1  1045420043 ns/op  2189 acq/s  15.00 ahead-bound  75.00 ahead-max  50.00 ahead-p99  6.000 passed-max  3.000 passed-p99  9.024 cmds/acq  0 failed  2171 handoffs/s  143.7 ping-p50-µs  1071 ping-p99-µs  23.08 redis-calls/acq  9493 wake-max-µs  389.6 wake-p50-µs  645.9 wake-p90-µs  1530 wake-p99-µs
BenchmarkWakeup/hot/shared/waiters=16/redislock-2  1  2056788142 ns/op  7861 acq/s  15.00 ahead-bound  4718 ahead-max  279.0 ahead-p99  2051 passed-max  117.0 passed-p99  2.147 cmds/acq  0 failed  674.4 handoffs/s  90.72 ping-p50-µs  389.0 ping-p99-µs  5.444 redis-calls/acq  1330 wake-max-µs  118.8 wake-p50-µs  237.6 wake-p90-µs  686.3 wake-p99-µs
BenchmarkWakeup/hot/shared/waiters=256/lockwatch-2  1  1132179010 ns/op  2743 acq/s  255.0 ahead-bound  255.0 ahead-max  255.0 ahead-p99  0 passed-max  0 passed-p99  2.000 cmds/acq  0 failed  2743 handoffs/s  288.8 ping-p50-µs  712.3 ping-p99-µs  28.75 redis-calls/acq  4683 wake-max-µs  346.4 wake-p50-µs  498.9 wake-p90-µs  742.7 wake-p99-µs
BenchmarkWakeup/hot/shared/waiters=256/rueidislock-2  1  1508267659 ns/op  2793 acq/s  255.0 ahead-bound  1274 ahead-max  680.0 ahead-p99  9.000 passed-max  2.000 passed-p99  9.002 cmds/acq  0 failed  2781 handoffs/s  131.8 ping-p50-µs  884.7 ping-p99-µs  23.02 redis-calls/acq  7298 wake-max-µs  322.2 wake-p50-µs  489.2 wake-p90-µs  704.6 wake-p99-µs
`

// wakeReport parses out into a report and returns its wake-up goals, met
// or not and the result, by text, and its wake-up section.
func wakeReport(t *testing.T, out string) (map[string]string, string) {
	t.Helper()
	r, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	rp := &report{r: r, rev: "abc"}
	met := map[string]string{}
	for _, g := range rp.wakeGoals() {
		if g.known {
			met[g.text] = fmt.Sprint(g.met, " ", g.result)
		}
	}
	var md strings.Builder
	rp.writeWakeup(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, false)
	return met, md.String()
}

func TestWakeupGoalsCoverEveryHotConfiguration(t *testing.T) {
	met, _ := wakeReport(t, wakeSample)
	missing := "16 waiters, a Locker each: not measured; "
	assert.Equal(t, "false 16 waiters, one Locker: 0.84× (not met); "+missing+"256 waiters, one Locker: 1.08× (not met); "+
		"256 waiters, a Locker each: not measured — 0 of 4 met", met["wake-up p50 ≤ 0.6× rueidislock's"])
	assert.Equal(t, "false 16 waiters, one Locker: 1.21×; "+missing+"256 waiters, one Locker: 1.20×; "+
		"256 waiters, a Locker each: not measured — 2 of 4 met", met["wake-up p50 ≤ 1.3× a PING p50 of the same seconds"],
		"over lockwatch's own PING, not rueidislock's")
	assert.Contains(t, met["hand-offs per second ≥ 1.2× rueidislock's"], "16 waiters, one Locker: 1.20× (not met)",
		"2,595 ÷ 2,171 is 1.195: computed, not rounded")
	assert.Contains(t, met["hand-offs per second ≥ 1.2× rueidislock's"], "256 waiters, one Locker: 0.99× (not met)")
	assert.Contains(t, met["Redis commands per acquisition ≤ 3"], "16 waiters, one Locker: 2.00;")
	order := met[passedGoal]
	assert.Contains(t, order, "16 waiters, one Locker: 1;", "ahead-max 16 over its bound of 15 does not fail it")
	assert.Contains(t, order, "256 waiters, one Locker: 0;")
	assert.True(t, strings.HasSuffix(order, " — 2 of 4 met"), order)

	full := strings.ReplaceAll(wakeSample, "shared/waiters=16", "own/waiters=16")
	full = wakeSample + full + strings.ReplaceAll(wakeSample, "shared/waiters=256", "own/waiters=256")
	met, _ = wakeReport(t, full)
	assert.Equal(t, "true 16 waiters, one Locker: 2.00; 16 waiters, a Locker each: 2.00; 256 waiters, one Locker: 2.00; "+
		"256 waiters, a Locker each: 2.00 — 4 of 4 met", met["Redis commands per acquisition ≤ 3"])
	assert.True(t, strings.HasPrefix(met["wake-up p99 ≤ 2 ms"], "true "), met["wake-up p99 ≤ 2 ms"])
	assert.Equal(t, "true 16 waiters, one Locker: 1; 16 waiters, a Locker each: 1; 256 waiters, one Locker: 0; "+
		"256 waiters, a Locker each: 0 — 4 of 4 met", met[passedGoal])

	second := strings.Replace(full, "1.000 passed-max", "2.000 passed-max", 1)
	met, _ = wakeReport(t, full+second)
	assert.Equal(t, "false 16 waiters, one Locker: 2 (not met); 16 waiters, a Locker each: 1; 256 waiters, one Locker: 0; "+
		"256 waiters, a Locker each: 0 — 3 of 4 met", met[passedGoal], "the most in any run, not the median")
}

const passedGoal = "served in arrival order: no waiter passed twice by the same other waiter (passed-max ≤ 1, most in any run)"

func TestWakeupTablesShowEveryCaseAndLoss(t *testing.T) {
	_, out := wakeReport(t, wakeSample)
	assert.True(t, strings.HasPrefix(out, wakeBegin), out)
	assert.Contains(t, out, "`BenchmarkWakeup`, 1 runs,")
	assert.Contains(t, out, " | 274 | 375 | 473 | 9,601 | 90 | 248 | 3.04× | 0.89× | 0 |\n")
	assert.Contains(t, out, "| 16 | one Locker | lockwatch | 2,595 | 2,595 | 1.20× | 2.00 | 28.80 | 0 |\n")
	assert.Contains(t, out, "| 16 | one Locker | redislock | 7,861 | 674 | 0.31× | 2.15 | 5.44 | 0 |\n")
	assert.Contains(t, out, "| 16 | one Locker | lockwatch | 326 | 573 | 1,282 | 6,128 | 269 | 1,183 | 1.21× | 0.84× | 15 | 16 | 15 | 0 | 1 |\n")
	assert.Contains(t, out, "| 16 | one Locker | redislock | 119 | 238 | 686 | 1,330 | 91 | 389 | 1.31× | 0.30× | 279 | 4,718 | 15 | 117 | 2,051 |\n")
	for _, loss := range []string{
		"- hand-off, one waiter: max 9,601 µs, rueidislock 6,344 µs\n",
		"- 16 waiters, one Locker: wake-up p50 (µs) 326, redislock 119\n",
		"- 16 waiters, one Locker: acquisitions/s 2,595, redislock 7,861\n",
		"- 16 waiters, one Locker: Redis calls/acq 28.80, rueidislock 23.08\n",
		"- 256 waiters, one Locker: hand-offs/s 2,743, rueidislock 2,781\n",
	} {
		assert.Contains(t, out, loss)
	}
	assert.NotContains(t, out, "hand-offs/s 2,595, rueidislock", "lockwatch's 2,595 beat rueidislock's 2,171")
	assert.NotContains(t, out, "Inf")
	assert.NotContains(t, out, "<details>", "the full report carries the raw output once, at its end")
}

func TestSpliceSection(t *testing.T) {
	section := wakeBegin + "\n## Wake-up on release\n\nnew\n\n" + wakeEnd + "\n\n"
	fresh := spliceSection("# r\n\n## Loss\n\nx\n\n## Reproduce\n\ny\n", section)
	assert.Equal(t, "# r\n\n## Loss\n\nx\n\n"+section+"## Reproduce\n\ny\n", fresh)

	old := strings.Replace(fresh, "new", "old figures", 1)
	assert.Equal(t, fresh, spliceSection(old, section), "the section is replaced, the rest kept")
	assert.Equal(t, "# r\n\n"+section, spliceSection("# r\n", section))
}

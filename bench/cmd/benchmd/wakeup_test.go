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
BenchmarkWakeup/hot/shared/waiters=16/lockwatch-2  1  1015259314 ns/op  2724 acq/s  3.809 cmds/acq  0 failed  1807 handoffs/s  23.81 redis-calls/acq
BenchmarkWakeup/hot/shared/waiters=16/rueidislock-2  1  1016208167 ns/op  3658 acq/s  9.043 cmds/acq  0 failed  3621 handoffs/s  23.09 redis-calls/acq
`

func TestWakeupGoalsAndTables(t *testing.T) {
	r, err := parse(strings.NewReader(wakeSample))
	require.NoError(t, err)
	rp := &report{r: r, rev: "abc"}
	met := map[string]string{}
	for _, g := range rp.wakeGoals() {
		if g.known {
			met[g.text] = fmt.Sprint(g.met, " ", g.result)
		}
	}
	assert.Equal(t, "true 274 µs", met["wake-up, single node: p50 ≤ 300 µs from the start of the release"])
	assert.Equal(t, "false 0.89×", met["wake-up, single node: p50 ≤ 0.5× rueidislock's"])
	assert.Equal(t, "true 3.81", met["hot key, 16 waiters (one Locker): ≤ 6 commands per acquisition"])
	assert.Equal(t, "false 0.50×", met["hot key, 16 waiters (one Locker): hand-offs per second ≥ rueidislock's"])
	assert.NotContains(t, met, "wake-up, Cluster: p50 ≤ 300 µs from the start of the release", "not in the sample")

	var md strings.Builder
	rp.writeWakeup(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, false)
	out := md.String()
	assert.True(t, strings.HasPrefix(out, wakeBegin), out)
	assert.Contains(t, out, " | 274 | 375 | 473 | 9,601 | 90 | 248 | 3.0× | 0.89× | 0 |\n")
	assert.Contains(t, out, "| 16 | one Locker | lockwatch | 2,724 | 1,807 | 0.50× | 3.81 | 23.81 | 0 |\n")
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

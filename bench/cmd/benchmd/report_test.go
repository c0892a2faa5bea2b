package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goalsOf evaluates the report of out and returns its cycle goals, met or
// not and the result, by text, and those of earlier issues.
func goalsOf(t *testing.T, out string) (cycle, earlier map[string]string) {
	t.Helper()
	r, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	rp := &report{r: r}
	rp.evaluate()
	cycle, earlier = map[string]string{}, map[string]string{}
	for _, g := range rp.goals {
		if g.known {
			cycle[g.text] = fmt.Sprint(g.met, " ", g.result)
		}
	}
	for _, g := range rp.earlier {
		earlier[g.text] = fmt.Sprint(g.known)
	}
	return cycle, earlier
}

func TestCycleGoalsAreIssue28s(t *testing.T) {
	var out strings.Builder
	// Two configurations: lockwatch 1.10× and 1.50× redislock with
	// Release, 1.00× and 1.20× with ReleaseAsync.
	for _, c := range []struct {
		cfg                string
		redislock, off, as float64
	}{{"pool=default,timeouts=on/fresh", 100, 110, 100}, {"pool=64,timeouts=off/reused", 100, 150, 120}} {
		for impl, ns := range map[string]float64{"raw": 80, "redislock": c.redislock, "lockwatch-off": c.off, "lockwatch-async": c.as} {
			fmt.Fprintf(&out, "BenchmarkClients/%s/%s-2  100  %.0f ns/op\n", c.cfg, impl, ns)
		}
	}
	out.WriteString("BenchmarkCycle/parallel16/unique/lockwatch-off-2  100  1000 ns/op\n")
	out.WriteString("BenchmarkCycle/parallel16/unique/lockwatch-on-2  100  1090 ns/op\n")
	out.WriteString("BenchmarkRedisInstructions/lockwatch/fresh-2  1  1 ns/op  99000 Ir/cycle\n")
	out.WriteString("BenchmarkRedisInstructions/lockwatch/reused-2  1  1 ns/op  131000 Ir/cycle\n")
	cycle, earlier := goalsOf(t, out.String())
	assert.Equal(t, map[string]string{
		"cycle, 16 goroutines, every client configuration, Release: ≤ 1.20× redislock":           "false worst 1.50× (pool=64,timeouts=off, reused); 1 of 2 met",
		"cycle, 16 goroutines, every client configuration, ReleaseAsync: ≤ 1.20× redislock":      "true worst 1.20× (pool=64,timeouts=off, reused); 2 of 2 met",
		"cycle, parallel16/unique: telemetry on ≤ 1.10× off":                                     "true 1.09×",
		"Redis instructions per acquire + release, a new key per cycle: ≤ 100,000":               "true 99,000",
		"Redis instructions per acquire + release, a full bar list (16 keys in turn): ≤ 130,000": "false 131,000",
	}, cycle, "the single-goroutine goals are not in the run")
	assert.Equal(t, "false", earlier["HTTP, 1 client: added p50 ≤ 1.2× that of a handler making one PING"], "earlier goals stay, unmeasured here")
}

func TestHotChartHasARowPerCase(t *testing.T) {
	r, err := parse(strings.NewReader(wakeSample))
	require.NoError(t, err)
	dir := t.TempDir()
	rp := &report{r: r, charts: chart{dir: dir, link: "charts"}}
	var md strings.Builder
	rp.writeWakeup(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, false)
	require.NoError(t, rp.err)
	assert.Contains(t, md.String(), "](charts/wakeup-hot.svg)")
	svg, err := os.ReadFile(filepath.Join(dir, "wakeup-hot.svg"))
	require.NoError(t, err)
	wellFormed(t, string(svg))
	for _, row := range []string{">16, one Locker: lockwatch<", ">16, one Locker: rueidislock<", ">16, one Locker: redislock<",
		">256, one Locker: lockwatch<", ">256, one Locker: rueidislock<"} {
		assert.Contains(t, string(svg), row)
	}
}

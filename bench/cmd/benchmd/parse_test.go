package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/lockwatch/lockwatch/bench
cpu: AMD EPYC
BenchmarkCycle/single/ping-2   	   23019	     56796 ns/op	         1.000 rtt/op	     188 B/op	       6 allocs/op
BenchmarkCycle/single/ping-2   	   23019	     50000 ns/op	         1.000 rtt/op	     190 B/op	       6 allocs/op
BenchmarkCycle/single/ping-2   	   23019	     10000 ns/op	         1.000 rtt/op	     192 B/op	       6 allocs/op
BenchmarkScale/leases=1000-2   	       1	8165361660 ns/op	       708.0 B/lease
BenchmarkScale/leases=1000-2   	       1	8165361660 ns/op	       700.0 B/lease
--- FAIL: BenchmarkOther
PASS
ok  	github.com/lockwatch/lockwatch/bench	28.368s
`

func TestParseMedians(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	assert.Equal(t, []string{"Cycle/single/ping", "Scale/leases=1000"}, r.names)
	assert.Equal(t, "AMD EPYC", r.header["cpu"])

	for _, tc := range []struct {
		name, unit string
		want       float64
		runs       int
	}{
		{"Cycle/single/ping", "ns/op", 50000, 3},
		{"Cycle/single/ping", "B/op", 190, 3},
		{"Scale/leases=1000", "B/lease", 704, 2},
	} {
		got, ok := r.median(tc.name, tc.unit)
		assert.True(t, ok, tc.name)
		assert.InDelta(t, tc.want, got, 1e-9, tc.name+" "+tc.unit)
		assert.Equal(t, tc.runs, r.runs(tc.name, tc.unit))
	}
	_, ok := r.median("Cycle/single/ping", "p50-ns")
	assert.False(t, ok)
}

func TestPerRunRatio(t *testing.T) {
	r := &results{values: map[string]map[string][]float64{}}
	for _, v := range [][2]float64{{10, 20}, {30, 40}, {100, 110}} { // drift between runs
		r.add("a", "ns/op", v[0])
		r.add("b", "ns/op", v[1])
	}
	got, ok := r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{"a", "ns/op"}, [2]string{"b", "ns/op"})
	require.True(t, ok)
	assert.InDelta(t, 0.75, got, 1e-9) // median of 0.5, 0.75, 0.909

	r.add("b", "ns/op", 1) // runs differ: ratio of medians
	got, ok = r.perRun(func(v []float64) float64 { return v[0] / v[1] }, [2]string{"a", "ns/op"}, [2]string{"b", "ns/op"})
	require.True(t, ok)
	assert.InDelta(t, 30.0/30, got, 1e-9)

	_, ok = r.perRun(func(v []float64) float64 { return v[0] }, [2]string{"missing", "ns/op"})
	assert.False(t, ok)
}

func TestInterleavedRatioAndGoal(t *testing.T) {
	out := `BenchmarkCycle/single/interleaved-2  100  900000 ns/op  100000 raw-ns/cycle  110000 raw-fenced-ns/cycle  120000 lockwatch-off-ns/cycle
BenchmarkCycle/single/interleaved-2  100  900000 ns/op  200000 raw-ns/cycle  205000 raw-fenced-ns/cycle  210000 lockwatch-off-ns/cycle
BenchmarkCycle/single/interleaved-2  100  900000 ns/op  100000 raw-ns/cycle  104000 raw-fenced-ns/cycle  108000 lockwatch-off-ns/cycle
`
	r, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	rp := &report{r: r}
	x, ok := rp.interleavedRatio("lockwatch-off")
	require.True(t, ok)
	assert.InDelta(t, 1.08, x, 1e-9) // median of 1.20, 1.05, 1.08

	rp.evaluate()
	var found bool
	for _, g := range rp.goals {
		if strings.Contains(g.text, "single/interleaved") {
			found = true
			assert.True(t, g.known)
			assert.True(t, g.met, g.result) // over the fenced floor: median of 1.09, 1.02, 1.04
			assert.Equal(t, "1.04×", g.result)
		}
	}
	assert.True(t, found, "no goal row for the interleaved cycle")
	var md strings.Builder
	rp.writeInterleaved(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) })
	assert.Contains(t, md.String(), "| lockwatch, telemetry off (no-op providers) | 120,000 | 1.08× |")
}

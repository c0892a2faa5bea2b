package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wellFormed fails t unless svg parses as XML.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err, svg)
	}
}

func TestBarChartDrawsEveryBarAndTheGoal(t *testing.T) {
	svg := barChart("t <1>", "axis", []bar{
		{"a", "Release", 1.5}, {"a", "ReleaseAsync", 1.2}, {"b", "Release", 2.5}, {"b", "ReleaseAsync", 0.9},
	}, 1, "goal ≤ 1.00×")
	wellFormed(t, svg)
	// A background, four bars and two legend keys.
	assert.Equal(t, 7, strings.Count(svg, "<rect "))
	for _, label := range []string{">1.50<", ">1.20<", ">2.50<", ">0.90<", "goal ≤ 1.00×", "t &lt;1&gt;"} {
		assert.Contains(t, svg, label)
	}
	// The axis runs to 5 (2.5 rounded up to 1, 2 or 5 times a power of 10).
	assert.Contains(t, svg, ">5<")
}

func TestRangeChartHasARowPerLibrary(t *testing.T) {
	svg := rangeChart("hand-off", []spread{{"lockwatch", 300, 600, 900, 4000}, {"redislock", 2500, 2700, 3000, 9000}})
	wellFormed(t, svg)
	assert.Contains(t, svg, ">lockwatch<")
	assert.Contains(t, svg, ">redislock<")
	assert.Contains(t, svg, ">100<", "a log axis from 100 µs")
	assert.Contains(t, svg, ">10000<")
}

func TestChartsAreLinkedFromTheReport(t *testing.T) {
	dir := t.TempDir()
	c, err := chartsFor(filepath.Join(dir, "BENCHMARKS.md"), filepath.Join(dir, "bench", "charts"))
	require.NoError(t, err)
	md, err := c.write("x.svg", "alt", "<svg/>")
	require.NoError(t, err)
	assert.Equal(t, "![alt](bench/charts/x.svg)\n\n", md)
	_, err = os.Stat(filepath.Join(dir, "bench", "charts", "x.svg"))
	assert.NoError(t, err)
}

func TestInstructionsAreShownOverTheRawFloor(t *testing.T) {
	out := "BenchmarkRedisInstructions/raw-2  1  1 ns/op  33000 Ir/cycle\n" +
		"BenchmarkRedisInstructions/lockwatch/fresh-2  1  1 ns/op  165000 Ir/cycle\n"
	r, err := parse(strings.NewReader(out))
	require.NoError(t, err)
	rp := &report{r: r, machine: machine{redis: "Redis server v=7.0.15 sha=0"}}
	var md strings.Builder
	rp.writeInstructions(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) })
	assert.Contains(t, md.String(), "redis-server 7.0.15")
	assert.Contains(t, md.String(), "| lockwatch's Acquire + Release, a new key per cycle | 165,000 | 5.00× |")
}

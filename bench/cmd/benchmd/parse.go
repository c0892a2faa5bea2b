package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results holds every value of every benchmark of one or more `go test
// -bench` outputs, by benchmark name (the -GOMAXPROCS suffix removed) and
// unit, in the order the runs printed them.
type results struct {
	names  []string // in order of first appearance
	values map[string]map[string][]float64
	header map[string]string // goos, goarch, pkg, cpu
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads benchmark lines: "BenchmarkX-2  N  v unit  v unit ...".
// Other lines (PASS, ok, logs) are skipped; header lines ("cpu: ...") are
// kept.
func parse(r io.Reader) (*results, error) {
	res := &results{values: map[string]map[string][]float64{}, header: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, h := range []string{"goos", "goarch", "pkg", "cpu"} {
			if v, ok := strings.CutPrefix(line, h+": "); ok {
				res.header[h] = strings.TrimSpace(v)
			}
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			res.add(name, f[i+1], v)
		}
	}
	return res, sc.Err()
}

func (r *results) add(name, unit string, v float64) {
	m := r.values[name]
	if m == nil {
		m = map[string][]float64{}
		r.values[name] = m
		r.names = append(r.names, name)
	}
	m[unit] = append(m[unit], v)
}

// median returns the median of name's values in unit (the mean of the two
// middle ones for an even count), and whether there was any.
func (r *results) median(name, unit string) (float64, bool) {
	vs := r.values[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	return medianOf(vs), true
}

// runs returns how many values name has in unit.
func (r *results) runs(name, unit string) int { return len(r.values[name][unit]) }

// perRun computes f for each run from the i-th value of every input
// (name, unit) and returns the median: a ratio within each run, then the
// median over runs, which is steadier than a ratio of medians when the
// machine's speed drifts between runs. When the inputs do not have the
// same number of runs it falls back to f of the medians.
func (r *results) perRun(f func(v []float64) float64, inputs ...[2]string) (float64, bool) {
	n := -1
	for _, in := range inputs {
		k := r.runs(in[0], in[1])
		if k == 0 {
			return 0, false
		}
		if n == -1 {
			n = k
		} else if k != n {
			n = 0
		}
	}
	if n <= 0 {
		meds := make([]float64, len(inputs))
		for i, in := range inputs {
			meds[i], _ = r.median(in[0], in[1])
		}
		return f(meds), true
	}
	out := make([]float64, n)
	v := make([]float64, len(inputs))
	for run := range n {
		for i, in := range inputs {
			v[i] = r.values[in[0]][in[1]][run]
		}
		out[run] = f(v)
	}
	return medianOf(out), true
}

func medianOf(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}

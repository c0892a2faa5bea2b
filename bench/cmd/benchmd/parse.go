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
	vs := slices.Clone(r.values[name][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// runs returns how many values name has in unit.
func (r *results) runs(name, unit string) int { return len(r.values[name][unit]) }

package main

import (
	"fmt"
	"strconv"
	"strings"
)

// load is what else the machine did while the benchmarks ran: the load
// averages before and after, and how busy its CPUs were in between (every
// process, the benchmarks' own included), from /proc. The figures of a
// shared machine mean little without it.
type load struct {
	before, after string // /proc/loadavg's 1, 5 and 15 minute averages
	busy          float64
	known         bool
}

// cpuTimes is the first line of /proc/stat: busy and total jiffies of all
// CPUs.
type cpuTimes struct{ busy, total float64 }

func readCPUTimes() (cpuTimes, bool) {
	line, _, _ := strings.Cut(readFile("/proc/stat"), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		t.total += v
		if i != 3 && i != 4 { // idle and iowait
			t.busy += v
		}
	}
	return t, true
}

func loadAverages() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}

// sampleLoad starts a measurement; the function it returns ends it.
func sampleLoad() func() load {
	before := loadAverages()
	start, ok := readCPUTimes()
	return func() load {
		l := load{before: before, after: loadAverages()}
		end, ok2 := readCPUTimes()
		if ok && ok2 && end.total > start.total {
			l.busy, l.known = 100*(end.busy-start.busy)/(end.total-start.total), true
		}
		return l
	}
}

// String is the load as the report gives it.
func (l load) String() string {
	if !l.known {
		return "not recorded (a saved run)"
	}
	return fmt.Sprintf("1 / 5 / 15-minute load average %s before the runs, %s after; the CPUs %.0f%% busy in between (every process, the benchmarks' own included)",
		l.before, l.after, l.busy)
}

package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes where the figures were measured.
type machine struct {
	cpu, memory, kernel, goVersion, redis, date string
	cores                                       int
	load                                        load
}

func describeMachine(goCmd string, measured time.Time) machine {
	m := machine{
		cpu:       procField("/proc/cpuinfo", "model name"),
		memory:    "unknown",
		kernel:    strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		goVersion: output(goCmd, "version"),
		redis:     output("redis-server", "--version"),
		date:      measured.UTC().Format("2006-01-02 15:04 UTC"),
		cores:     runtime.NumCPU(),
	}
	if kb := strings.Fields(procField("/proc/meminfo", "MemTotal")); len(kb) > 0 {
		if n, err := strconv.ParseFloat(kb[0], 64); err == nil {
			m.memory = strconv.FormatFloat(n/(1<<20), 'f', 1, 64) + " GiB"
		}
	}
	return m
}

// procField returns the value of the first "name : value" line of a /proc
// file, or "unknown".
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return string(b)
}

func output(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

// redisVersion is the redis-server version alone ("7.0.15"), or the whole
// --version line when it has no v= field.
func (m machine) redisVersion() string {
	for _, f := range strings.Fields(m.redis) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return m.redis
}

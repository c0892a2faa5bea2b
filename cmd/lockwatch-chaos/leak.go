package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// childProcesses lists the processes whose parent is this one: after a run
// every redis-server and holder process it started must have been killed
// and reaped, so none may be left, zombies included.
func childProcesses() ([]string, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	if len(stats) == 0 {
		return nil, nil // no procfs: nothing to check with
	}
	self := os.Getpid()
	var found []string
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		if state, ppid, ok := parseStat(s); ok && ppid == self {
			start, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
			found = append(found, fmt.Sprintf("pid %s %s (state %s)", strings.TrimSpace(s[:start]), s[start:end+1], state))
		}
	}
	return found, nil
}

// parseStat reads the state and the parent of a /proc/PID/stat line:
// pid (comm) state ppid ...; comm may contain spaces and parens.
func parseStat(s string) (state string, ppid int, ok bool) {
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return "", 0, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// isStopped reports whether process pid is stopped by a signal (state T).
func isStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	state, _, ok := parseStat(string(b))
	return ok && state == "T"
}

// isProgramProcess reports whether pid runs, as a program of a lockwatch
// run holder or what one left behind (its environment says so): a pid that
// heartbeated and has exited since may have been reused.
func isProgramProcess(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if strings.HasPrefix(kv, programEnv+"=") {
			return true
		}
	}
	return false
}

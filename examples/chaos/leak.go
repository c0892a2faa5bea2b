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
		// pid (comm) state ppid ...; comm may contain spaces and parens.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == self {
			start := strings.IndexByte(s, '(')
			found = append(found, fmt.Sprintf("pid %s %s (state %s)", strings.TrimSpace(s[:start]), s[start:end+1], fields[0]))
		}
	}
	return found, nil
}

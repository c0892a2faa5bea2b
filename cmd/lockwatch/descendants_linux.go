package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockwatch run reaches what its program started through the program's
// process group, and on Linux through the process tree too: it is the
// subreaper of its descendants (PR_SET_CHILD_SUBREAPER), so a process
// that leaves the group (setsid, a daemon's double fork) stays below
// lockwatch when its parent exits, instead of moving to init. What is
// below lockwatch is read from /proc when it is needed: at a loss, when
// the program has exited, and when the watchdog acts.

// adoptOrphans makes lockwatch the subreaper of its descendants. It fails
// only on kernels before 3.4, which leave lockwatch the program's group.
func adoptOrphans() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// procStat is what lockwatch reads of a process in /proc/<pid>/stat.
type procStat struct {
	ppid, pgrp int
	state      byte // R, S, D, T, Z...
}

// readStat reads pid's stat; false once it is gone.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name may hold spaces and parentheses: the fields that
	// follow the last ')' are state, ppid and pgrp.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 3 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgrp, _ := strconv.Atoi(f[2])
	return procStat{ppid: ppid, pgrp: pgrp, state: f[0][0]}, true
}

// readStats reads every process's stat.
func readStats() map[int]procStat {
	entries, _ := os.ReadDir("/proc")
	stats := make(map[int]procStat, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if st, ok := readStat(pid); ok {
				stats[pid] = st
			}
		}
	}
	return stats
}

// outsiders returns the live processes below root that are not in process
// group pgid, leaving out skip and what is below it (the watchdog): the
// descendants of the program that the group's signals miss.
func outsiders(root, skip, pgid int) []int {
	stats := readStats()
	children := map[int][]int{}
	for pid, st := range stats {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c == skip {
				continue
			}
			if st := stats[c]; st.pgrp != pgid && st.state != 'Z' {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	return out
}

// groupRuns tells whether process group pgid has a process that is not
// a zombie: one whose parent, a stopped lockwatch, has not reaped it
// still counts for kill.
func groupRuns(pgid int) bool {
	for _, st := range readStats() {
		if st.pgrp == pgid && st.state != 'Z' {
			return true
		}
	}
	return false
}

// reapOrphans reaps lockwatch's exited children other than the program
// and the watchdog, which are waited for: the orphans it adopted, which
// would otherwise stay zombies for as long as it runs.
func reapOrphans(program, watchdog int) {
	self := os.Getpid()
	for pid, st := range readStats() {
		if st.ppid == self && st.state == 'Z' && pid != program && pid != watchdog {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// stillStopped tells whether pid is stopped now: a stop that wait
// reported may have been ended since, by the SIGCONT lockwatch sent with
// a forwarded SIGTERM.
func stillStopped(pid int) bool {
	st, ok := readStat(pid)
	return ok && st.state == 'T'
}

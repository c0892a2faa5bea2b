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

// reach reads what lockwatch can reach of a program's processes: whether
// its process group pgid has a live process (a zombie is not work), and
// the live processes below root outside the group, leaving out skip and
// what is below it (the watchdog): the descendants the group's signals
// miss. A read of /proc is not atomic: a process whose parent exits while
// it is read may be missed; it is found by the next, as lockwatch's
// parent.
func reach(root, skip, pgid int) (group bool, outside []int) {
	stats := readStats()
	children := map[int][]int{}
	for pid, st := range stats {
		children[st.ppid] = append(children[st.ppid], pid)
		group = group || st.pgrp == pgid && st.state != 'Z'
	}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c == skip {
				continue
			}
			if st := stats[c]; st.pgrp != pgid && st.state != 'Z' {
				outside = append(outside, c)
			}
			queue = append(queue, c)
		}
	}
	return group, outside
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

// alive tells whether pid runs: neither gone nor a zombie.
func alive(pid int) bool {
	st, ok := readStat(pid)
	return ok && st.state != 'Z'
}

// stillStopped tells whether pid is stopped now: a stop that wait
// reported may have been ended since, by the SIGCONT lockwatch sent with
// a forwarded SIGTERM.
func stillStopped(pid int) bool {
	st, ok := readStat(pid)
	return ok && st.state == 'T'
}

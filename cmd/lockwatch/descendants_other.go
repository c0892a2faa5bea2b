//go:build !linux

package main

import "syscall"

// Off Linux lockwatch run reaches what its program started through the
// program's process group only: a process that leaves it (setsid, a
// daemon) is not seen, and moves to init when its parent exits.

func adoptOrphans() {}

// reach tells whether process group pgid has a process, a zombie
// counting, and finds nothing outside it.
func reach(root, skip, pgid int) (group bool, outside []int) {
	return syscall.Kill(-pgid, 0) == nil, nil
}

func reapOrphans(program, watchdog int) {}

// alive tells whether pid exists, a zombie counting.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// stillStopped trusts wait's report of a stop.
func stillStopped(int) bool { return true }

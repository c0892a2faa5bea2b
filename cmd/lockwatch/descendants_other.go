//go:build !linux

package main

import "syscall"

// Off Linux lockwatch run reaches what its program started through the
// program's process group only: a process that leaves it (setsid, a
// daemon) is not seen, and moves to init when its parent exits.

func adoptOrphans() {}

func outsiders(root, skip, pgid int) []int { return nil }

// groupRuns tells whether process group pgid has a process, a zombie
// counting.
func groupRuns(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

func reapOrphans(program, watchdog int) {}

// stillStopped trusts wait's report of a stop.
func stillStopped(int) bool { return true }

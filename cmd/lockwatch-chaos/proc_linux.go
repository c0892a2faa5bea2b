package main

import "syscall"

// childAttr puts a holder process in a process group of its own, so that a
// Ctrl-C on the terminal reaches only the harness, which then stops its
// holders in order and collects their reports; and makes the kernel kill it
// if the harness dies without cleaning up (kill -9 of the harness itself).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// setsidSupervised: on Linux lockwatch run reaches the processes its
// program started that left the program's group (it is their subreaper),
// so the harness counts their heartbeats like any other.
const setsidSupervised = true

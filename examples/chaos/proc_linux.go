package main

import "syscall"

// childAttr makes the kernel kill a holder process whose parent died
// without cleaning up (kill -9 of the harness itself).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

//go:build !linux

package main

import "syscall"

// childAttr puts a holder process in a process group of its own, so that a
// Ctrl-C reaches only the harness; without Pdeathsig, a holder notices a
// dead harness by its stdin closing.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// setsidSupervised: elsewhere lockwatch run reaches its program's process
// group only, and says so: a process that left it (setsid) is
// unsupervised, made so on purpose, and its heartbeats are left out.
const setsidSupervised = false

//go:build !linux

package main

import "syscall"

// childAttr: without Pdeathsig, a holder process notices a dead parent by
// its stdin closing.
func childAttr() *syscall.SysProcAttr { return nil }

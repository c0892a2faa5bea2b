//go:build !linux

package main

import "syscall"

// dieWithLockwatch does nothing where the kernel has no parent-death
// signal: a program whose lockwatch was killed runs on there.
func dieWithLockwatch(*syscall.SysProcAttr) {}

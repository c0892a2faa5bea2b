//go:build !linux

package main

import "syscall"

// ownsTerminal is false off Linux: the program runs in its own process
// group in the background of the terminal, and a program that reads the
// terminal is stopped (SIGTTIN), and lockwatch with it (stop.go). Run it
// with stdin from elsewhere.
func ownsTerminal() bool { return false }

func foreground(*syscall.SysProcAttr) {}

func handTerminal(int) {}

func takeTerminalBack(int) {}

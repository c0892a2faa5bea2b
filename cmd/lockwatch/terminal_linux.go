package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ownsTerminal tells whether stdin is a terminal whose foreground process
// group is lockwatch's own: then lockwatch run hands the terminal to its
// program's group, so that an interactive program can read it (a
// background group that reads its terminal is stopped with SIGTTIN) and
// the keys the terminal turns into signals (Ctrl-C, Ctrl-\, Ctrl-Z) reach
// the program directly. A lockwatch started in the background (&), or
// with stdin from a file or a pipe (cron), leaves the terminal alone. It
// is asked again whenever lockwatch is continued, so that a job a shell
// brings back to the foreground (fg) gets the terminal for its program.
func ownsTerminal() bool {
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err != nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}

// foreground makes attr put the program's group in the foreground of the
// terminal on stdin (the Ctty is the child's fd 0, which is lockwatch's).
func foreground(attr *syscall.SysProcAttr) {
	attr.Foreground = true
	attr.Ctty = 0
}

// handTerminal makes the program's group pgid the terminal's foreground
// group again, when lockwatch's job is brought back to the foreground.
func handTerminal(pgid int) { _ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pgid) }

// takeTerminalBack makes lockwatch's group the terminal's foreground group
// again if the program's group pgid has it, as a shell does after a job,
// when the program stops or exits: so that the shell that started
// lockwatch gets its terminal back. A terminal the shell holds already
// (the job was continued in the background) is left to it.
func takeTerminalBack(pgid int) {
	if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil && fg == pgid {
		_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, syscall.Getpgrp())
	}
}

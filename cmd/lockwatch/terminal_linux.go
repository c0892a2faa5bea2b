package main

import (
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownsTerminal tells whether stdin is a terminal whose foreground process
// group is lockwatch's own: then lockwatch run hands the terminal to its
// program's group, so that an interactive program can read it (a
// background group that reads its terminal is stopped with SIGTTIN) and
// the keys the terminal turns into signals (Ctrl-C, Ctrl-\) reach the
// program directly. A lockwatch started in the background (&), or with
// stdin from a file or a pipe (cron), leaves the terminal alone.
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

// backgrounded is called once the program runs in the foreground:
// lockwatch, now in a background group, ignores SIGTTOU, so that its own
// lines on the terminal (the loss message) and taking the terminal back
// do not stop it. It is not ignored before the program starts because an
// ignored signal stays ignored across exec.
func backgrounded() { signal.Ignore(syscall.SIGTTOU) }

// takeTerminalBack makes lockwatch's group the terminal's foreground
// group again once the program has exited, as a shell does after a job,
// so that the shell that started lockwatch gets its terminal back.
func takeTerminalBack() {
	_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, syscall.Getpgrp())
}

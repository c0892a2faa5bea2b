package main

import (
	"os"
	"os/signal"
	"syscall"
)

// forwarded are the signals lockwatch run passes on to its program's
// process group, so that lockwatch stands in the chain of a supervisor
// (systemd, a container runtime, kill from a shell) as transparently as
// an exec would: the program decides what a signal means, and lockwatch
// keeps its lease until the program has exited.
var forwarded = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGALRM,
}

// catchSignals starts catching the forwarded signals. Before the program
// runs, a signal asking to stop ends a wait for the key; after, every one
// is forwarded.
func catchSignals() (chan os.Signal, func()) {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, forwarded...)
	return ch, func() { signal.Stop(ch) }
}

// catchJobSignals adds, as the program starts, the signals of job control
// to ch (stop.go says what lockwatch does with them) and SIGCHLD (an
// orphan lockwatch adopted has exited, see descendants_linux.go). Before,
// while lockwatch waits for its key, they keep their defaults: Ctrl-Z
// stops that wait. They are caught before the program starts, so that
// none is missed once it runs (a stop that reached lockwatch alone would
// leave the program running); the program's exec resets them.
func catchJobSignals(ch chan<- os.Signal) {
	signal.Notify(ch, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGCONT, syscall.SIGCHLD)
}

// ignoreTTOU is called once the program runs, so that lockwatch's own
// lines on a terminal it shares with its program, and its handing the
// terminal over, never stop it: a stopped lockwatch supervises nothing.
// It is not ignored before the program starts because an ignored signal
// stays ignored across exec.
func ignoreTTOU() { signal.Ignore(syscall.SIGTTOU) }

// asksToEnd tells the signals whose default action ends a process: they
// end a wait for the key (and, if the key was just taken, release it),
// and once the program runs they are followed by SIGCONT, so that a
// stopped process of its group gets them. USR1, USR2 and WINCH mean
// something only to the program.
func asksToEnd(s os.Signal) bool {
	switch s {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGALRM:
		return true
	}
	return false
}

// signalNumber is s's number, for the 128+n exit status.
func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 0
}

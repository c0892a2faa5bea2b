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
func catchSignals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, forwarded...)
	return ch, func() { signal.Stop(ch) }
}

// stopsAcquire tells the signals that end a wait for the key (and, if the
// key was just taken, release it): those whose default action ends a
// process. USR1, USR2 and WINCH mean something only to the program, which
// has not started.
func stopsAcquire(s os.Signal) bool {
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

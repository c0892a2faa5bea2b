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

// unignoreTTOU undoes ignoreTTOU before lockwatch elect starts the program
// of another term: an ignored signal stays ignored across exec, so the
// program would not get SIGTTOU's default. Go then catches SIGTTOU for
// lockwatch, and drops it, until ignoreTTOU again; the program's exec
// resets a caught signal to its default.
func unignoreTTOU() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTTOU)
	signal.Stop(ch)
}

// endOnSignal watches sigs while no program runs: the first signal that
// asks to end is passed to end. A job-control stop (caught once a program
// of lockwatch elect has run) stops lockwatch, as it does before. The
// function returned stops the watch and returns that signal, or nil.
func endOnSignal(sigs <-chan os.Signal, end func(os.Signal)) func() os.Signal {
	stop := make(chan struct{})
	got := make(chan os.Signal, 1)
	go func() {
		for {
			select {
			case s := <-sigs:
				switch {
				case asksToEnd(s):
					end(s)
					got <- s
					return
				case s == syscall.SIGTSTP, s == syscall.SIGTTIN:
					stopSelf()
				}
			case <-stop:
				got <- nil
				return
			}
		}
	}()
	return func() os.Signal {
		close(stop)
		return <-got
	}
}

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

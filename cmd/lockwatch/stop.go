package main

import (
	"os"
	"syscall"
)

// lockwatch run and its program are one job to whoever controls it (a
// shell, kill, a debugger), though they run in two process groups. So
// lockwatch mirrors stops as su and sudo do: a stop of the program stops
// lockwatch, a job-control stop sent to lockwatch is passed on to the
// program, and lockwatch continued continues the program.
//
// While lockwatch is stopped nothing renews the lease. A job continued
// before the lease's cancel point carries on under it; one stopped longer
// is ended by the watchdog before the key can expire (watchdog.go), and
// lockwatch, when continued, reports the loss and exits 79. So a stopped
// program holds its key for at most one TTL. SIGSTOP of lockwatch itself,
// which it cannot catch or pass on, leaves the program running, under the
// key until the same cancel point; the watchdog ends it there too.
//
// A program continued on its own (kill -CONT of its pid, or the watchdog
// ending it) finds lockwatch stopped by the mirror, and nothing would
// continue lockwatch: so lockwatch tells the watchdog it stops with its
// program, and the watchdog continues lockwatch once the program no longer
// is stopped (Linux: it reads the program's state in /proc).

// programStopped mirrors a stop of the program (Ctrl-Z on the terminal it
// holds, SIGSTOP or SIGTSTP sent to it, a read of the terminal from the
// background): lockwatch gives the terminal back and stops itself, so
// that a shell sees its job stopped and takes the terminal.
func (s *supervisor) programStopped(sig syscall.Signal) {
	switch {
	case s.ending:
		// A program that is being terminated must run to its end.
		s.p.signal(syscall.SIGCONT)
	case !stillStopped(s.p.pid):
		// Continued since, by the SIGCONT of a forwarded signal.
	case (sig == syscall.SIGTTIN || sig == syscall.SIGTTOU) && ownsTerminal():
		// The terminal is lockwatch's job's: hand it over, as a shell
		// does for the job it brings to the foreground.
		handTerminal(s.p.pid)
		s.p.signal(syscall.SIGCONT)
	default:
		takeTerminalBack(s.p.pid)
		s.stopped = true
		s.w.stopping()
		stopSelf()
	}
}

// relayStop passes a job-control stop sent to lockwatch (SIGTSTP, SIGTTIN)
// on to the program's group. If the program stops, lockwatch follows
// (programStopped); if it ignores the signal, both run on.
func (s *supervisor) relayStop(sig syscall.Signal) { s.p.signal(sig) }

// continued continues the program when lockwatch was continued (fg, bg,
// kill -CONT), and hands it the terminal if lockwatch is in its
// foreground (fg).
func (s *supervisor) continued() {
	s.stopped = false
	s.w.beat(s.l)
	if !s.exited && ownsTerminal() {
		handTerminal(s.p.pid)
	}
	s.p.signal(syscall.SIGCONT)
}

// stopSelf stops lockwatch as su does, with SIGSTOP. The program's own
// stop signal cannot be used: once Go has caught SIGTSTP or SIGTTIN it
// keeps a handler for it, and the signal would no longer stop lockwatch.
// A shell then reports the job stopped by a signal rather than from the
// keyboard. lockwatch carries on when a SIGCONT continues it (continued).
func stopSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) }

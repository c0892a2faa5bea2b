package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

// supervisor runs the program under the lease: it forwards signals,
// mirrors stops (stop.go), beats the watchdog (watchdog.go), terminates
// the program when the lease is lost, and, once the program has exited,
// ends what it left behind (leftovers.go) before the lease is released.
type supervisor struct {
	key    string
	grace  time.Duration
	p      *program
	l      *lease.Lease
	w      *watchdog
	stderr io.Writer

	lost     *lease.LostError
	ending   bool // SIGTERM was sent for a loss
	endAsked bool // a signal that asks to end was forwarded
	stopped  bool // lockwatch stopped itself with its program, and was not continued since
	exited   bool // the program has exited; what it left is being ended
	kill     <-chan time.Time
	killAt   time.Time
}

// run supervises until the program and what it left are gone, and
// returns the loss, or nil.
func (s *supervisor) run(sigs <-chan os.Signal) *lease.LostError {
	leaseDone := s.l.Context().Done()
	beat := time.NewTicker(s.w.every)
	defer beat.Stop()
	poll := time.NewTicker(leftoverPoll)
	poll.Stop()
	defer poll.Stop()
	stops := s.p.stops
	s.w.watch(s.p.pid, s.l)
	for {
		select {
		case sig := <-sigs:
			s.signal(sig.(syscall.Signal))
		case stop, ok := <-stops:
			if ok {
				s.programStopped(stop)
				continue
			}
			stops = nil
			if !s.programExited() {
				return s.lost
			}
			poll.Reset(leftoverPoll)
		case <-poll.C:
			if !s.leftBehind() {
				return s.lost
			}
		case <-leaseDone:
			leaseDone = nil
			s.leaseEnded()
		case <-s.kill:
			s.kill = nil
			s.signalAll(syscall.SIGKILL)
			if s.exited {
				// Nothing that runs is left to wait for: a process
				// SIGKILL has not ended yet is in the kernel, and
				// runs no code of its own again.
				return s.lost
			}
		case <-beat.C:
			// A stop of lockwatch takes effect a moment after it
			// asks for it: no beat may say it runs meanwhile.
			if !s.stopped {
				s.w.beat(s.l)
			}
		}
	}
}

// signal handles a signal lockwatch got while the program runs.
func (s *supervisor) signal(sig syscall.Signal) {
	switch {
	case sig == syscall.SIGCHLD:
		reapOrphans(s.p.pid, s.w.pid())
	case sig == syscall.SIGCONT:
		s.continued()
	case sig == syscall.SIGTSTP, sig == syscall.SIGTTIN:
		s.relayStop(sig)
	case asksToEnd(sig):
		s.endAsked = true
		s.p.signalEnd(sig)
	default:
		s.p.signal(sig)
	}
}

// leaseEnded terminates the program when the lease's context was
// cancelled by a loss: SIGTERM at once, at the latest at the lease's
// cancel point, SIGKILL after grace, before the key can expire. The
// context is cancelled by nothing else while the program runs: lockwatch
// releases after it, and ctx is not cancelled before.
func (s *supervisor) leaseEnded() {
	if !errors.As(context.Cause(s.l.Context()), &s.lost) {
		return
	}
	// The grace counts from the loss, not from the end of the reads of
	// /proc that signalAll takes.
	s.killBy(time.Now().Add(s.grace))
	s.ending = true
	s.signalAll(syscall.SIGTERM, syscall.SIGCONT)
	s.w.terminated()
	fmt.Fprintf(s.stderr, "lockwatch: %s: lease lost (%s): sent SIGTERM to the program, SIGKILL in %v\n",
		s.key, lossText(s.lost), s.grace)
}

// killBy arms the SIGKILL for at, unless one is armed for earlier.
func (s *supervisor) killBy(at time.Time) {
	if s.kill == nil || at.Before(s.killAt) {
		s.killAt = at
		s.kill = time.After(time.Until(at))
	}
}

// signalAll sends sigs, in order, to everything lockwatch can reach of
// what the program started: its process group first, at once, then on
// Linux the descendants outside it, which take a read of /proc to find
// (descendants_linux.go).
func (s *supervisor) signalAll(sigs ...syscall.Signal) {
	for _, sig := range sigs {
		s.p.signal(sig)
	}
	_, outside := reach(os.Getpid(), s.w.pid(), s.p.pid)
	for _, pid := range outside {
		for _, sig := range sigs {
			_ = syscall.Kill(pid, sig)
		}
	}
}

func lossText(e *lease.LostError) string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Reason, e.Err)
	}
	return string(e.Reason)
}

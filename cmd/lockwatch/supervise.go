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

	lost   *lease.LostError
	ending bool // SIGTERM was sent for a loss
	exited bool // the program has exited; what it left is being ended
	kill   <-chan time.Time
	killAt time.Time
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
			s.w.beat(s.l)
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
	s.ending = true
	s.signalAll(syscall.SIGTERM)
	s.signalAll(syscall.SIGCONT)
	s.w.terminated()
	s.killBy(time.Now().Add(s.grace))
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

// signalAll sends sig to everything lockwatch can reach of what the
// program started: its process group, and on Linux the descendants
// outside it (descendants_linux.go).
func (s *supervisor) signalAll(sig syscall.Signal) {
	s.p.signal(sig)
	for _, pid := range outsiders(os.Getpid(), s.w.pid(), s.p.pid) {
		_ = syscall.Kill(pid, sig)
	}
}

func lossText(e *lease.LostError) string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Reason, e.Err)
	}
	return string(e.Reason)
}

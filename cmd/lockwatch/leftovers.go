package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A program may exit and leave processes behind: a shell script's
// background job, a daemon it started. They would go on working after
// lockwatch released the key, beside the next holder's program. So before
// the release, lockwatch ends what it can reach (signalAll): SIGTERM and
// SIGCONT, then SIGKILL after --grace, or at the loss's SIGKILL if the
// lease was lost. It waits until nothing is left, polling every
// leftoverPoll.

// leftoverPoll is how often lockwatch looks whether what the program left
// has gone: the release waits for it.
const leftoverPoll = 10 * time.Millisecond

// programExited notes a loss the program's exit reveals, and starts
// ending what the program left. It reports whether anything is left to
// wait for.
func (s *supervisor) programExited() bool {
	s.exited = true
	takeTerminalBack(s.p.pid)
	if s.lost == nil && errors.As(s.l.Err(), &s.lost) {
		fmt.Fprintf(s.stderr, "lockwatch: %s: lease lost (%s) as the program exited\n", s.key, lossText(s.lost))
	}
	group, outside := s.leftovers()
	switch {
	case !group && len(outside) == 0:
		return false
	case s.ending:
		// They had their SIGTERM with the loss; its SIGKILL is armed.
		return true
	case s.lost != nil:
		// Lost past the cancel point, found out only now: no time
		// is left for a SIGTERM.
		s.signalAll(syscall.SIGKILL)
		fmt.Fprintf(s.stderr, "lockwatch: %s: the program left %s: sent SIGKILL\n", s.key, leftText(group, outside))
		return false
	}
	s.killBy(time.Now().Add(s.grace))
	s.signalAll(syscall.SIGTERM, syscall.SIGCONT)
	fmt.Fprintf(s.stderr, "lockwatch: %s: the program exited and left %s: sent SIGTERM, SIGKILL in %v\n", s.key, leftText(group, outside), s.grace)
	return true
}

// leftBehind tells whether anything the program left still runs.
func (s *supervisor) leftBehind() bool {
	group, outside := s.leftovers()
	return group || len(outside) > 0
}

// leftovers looks for what the program left: whether its process group
// has a process, and the descendants outside it. The orphans lockwatch
// adopted that exited are reaped first, so that none stays a zombie.
func (s *supervisor) leftovers() (group bool, outside []int) {
	reapOrphans(s.p.pid, s.w.pid())
	return reach(os.Getpid(), s.w.pid(), s.p.pid)
}

func leftText(group bool, outside []int) string {
	switch {
	case len(outside) == 0:
		return "processes in its process group"
	case group:
		return fmt.Sprintf("processes in its process group and %d outside it (pids %v)", len(outside), outside)
	default:
		return fmt.Sprintf("%d processes outside its process group (pids %v)", len(outside), outside)
	}
}

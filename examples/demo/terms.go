package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
)

// terms follows the job's election from its candidates' callbacks
// (election.Config.OnStartedLeading and OnStoppedLeading) and from each
// term's context: it narrates every transition, with how long the job
// went without a leader as this process saw it.
type terms struct {
	d *demo

	mu      sync.Mutex
	current int64     // the newest term started, 0 before the first
	endedAt time.Time // when that term's context ended; zero while it runs
}

// started narrates a term's start: who leads, and after how long without
// a leader, or with the previous term not over yet (its key was taken by
// force: only the fence stands between the two).
func (s *terms) started(r *replica, t election.Term) {
	s.mu.Lock()
	defer s.mu.Unlock()
	after := ""
	switch {
	case s.current == 0:
	case !s.endedAt.IsZero() && !t.Start.Before(s.endedAt):
		gap := t.Start.Sub(s.endedAt)
		after = fmt.Sprintf(", after %v without a leader", gap.Round(time.Millisecond))
	default:
		after = fmt.Sprintf(" while term %d's leader still works: only the fence stops its writes", s.current)
	}
	s.current, s.endedAt = t.Fence, time.Time{}
	s.d.out.event("elected", "%s leads %s in term %d%s", r.name, jobKey, t.Fence, after)
}

// ended notes when a term's context ended: from then on its leader works
// no more, unless a write of its is under way.
func (s *terms) ended(t election.Term) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.Fence == s.current {
		s.endedAt = time.Now()
	}
}

// stopped narrates a term's end, once its leader's function returned and
// the term was resigned. A killed process says nothing; the demo's stop
// is not narrated.
func (s *terms) stopped(r *replica, t election.Term, reason error) {
	how := endOf(reason)
	if how == "killed" || how == "stopped" {
		return
	}
	what := fmt.Sprintf("%s's term %d ends: %s", r.name, t.Fence, how)
	if strings.HasPrefix(how, "lost") {
		what += ": its work was cancelled before its key could expire"
	}
	if errors.Is(reason, election.ErrLateCompletion) {
		what += "; a late completion (the work returned after the term's key may have passed on): only the fence stops its writes"
	}
	s.d.out.event("deposed", "%s", what)
}

// endOf names how a term ended, from OnStoppedLeading's reason.
func endOf(reason error) string {
	var lost *lease.LostError
	switch {
	case errors.Is(reason, errKilled):
		return "killed"
	case errors.As(reason, &lost):
		return "lost (" + string(lost.Reason) + ")"
	case errors.Is(reason, election.ErrResigned):
		return "resigned"
	}
	return "stopped"
}

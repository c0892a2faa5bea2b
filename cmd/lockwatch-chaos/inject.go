package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

// injected is a fault as it happened: when it started and healed (on the
// history's clock), and what it hit.
type injected struct {
	fault
	Start, End int64
	Note       string
}

// injector runs the schedule against the lock Redis deployment and the
// holder processes, one fault at a time.
type injector struct {
	seed     uint64
	ttl      time.Duration
	redis    deployment
	children []*child // the holder processes
	cands    []*child // the candidate processes
	runs     []*runHolder
	inspect  func(ctx context.Context, key string) (lease.KeyInfo, error) // what Redis holds for a key
	out      *output
	start    time.Time // wall-clock start of the run, for the planned offsets
	stop     <-chan struct{}

	mu      sync.Mutex
	done    []injected
	cur     faultKind
	found   []string         // violations a fault saw as it struck
	expired map[workID]int64 // when a run fault saw a program's key expire in Redis
}

// flag records a violation a fault saw.
func (in *injector) flag(v string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.found = append(in.found, v)
}

// expiries are the moments the run faults saw programs' keys expire.
func (in *injector) expiries() map[workID]int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.expired)
}

// violations are those the faults saw.
func (in *injector) violations() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.found...)
}

func (in *injector) current() (faultKind, int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cur, len(in.done)
}

func (in *injector) injected() []injected {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]injected(nil), in.done...)
}

// run injects the plan in order. A fault whose planned start has passed
// (the previous one took longer, e.g. a restart) starts at once. It returns
// the first error that left the deployment in an unknown state.
func (in *injector) run(plan []fault) error {
	for _, f := range plan {
		if wait := time.Until(in.start.Add(f.At)); wait > 0 {
			sleep(wait, in.stop)
		}
		select {
		case <-in.stop:
			return nil
		default:
		}
		in.mu.Lock()
		in.cur = f.Kind
		in.mu.Unlock()
		rec := injected{fault: f, Start: now()}
		in.out.event("fault %s: start (seed %d)", f, in.seed)
		note, err := in.inject(f)
		rec.End, rec.Note = now(), note
		in.mu.Lock()
		in.cur = ""
		in.done = append(in.done, rec)
		in.mu.Unlock()
		if err != nil {
			in.out.event("fault #%d %s: %v", f.N, f.Kind, err)
			return fmt.Errorf("fault %s: %w", f, err)
		}
		msg := fmt.Sprintf("fault #%d %s: healed after %v", f.N, f.Kind, time.Duration(rec.End-rec.Start).Round(time.Millisecond))
		if note != "" {
			msg += "; " + note
		}
		in.out.event("%s", msg)
	}
	return nil
}

func (in *injector) inject(f fault) (string, error) {
	if f.Kind.runLane() {
		return in.runFault(f)
	}
	if f.Kind.electLane() {
		return in.leaderStop(f)
	}
	switch f.Kind {
	case faultHolderStop:
		return in.holderStop(f)
	case faultSuspend:
		return in.suspend(f)
	case faultHolderPartition:
		c := in.children[f.Target%len(in.children)]
		if err := c.net.cut(f.Dir); err != nil {
			return "", err
		}
		sleep(f.Dur, in.stop)
		return fmt.Sprintf("p%d cut off (%s dropped) by %s", c.index, f.Dir, c.net), c.net.heal()
	}
	return in.redis.inject(f, in.stop)
}

// holderStop stops a holder process past its TTL. In its Commit when the
// plan says so: the process tells the parent when it is inside Commit, after
// Commit's check and before its writes, and waits there to be stopped, so
// its write arrives after the lease expired and, usually, after another
// holder took the key and wrote with a newer fence. If it does not get
// there within 2 TTLs, it is stopped wherever it is.
func (in *injector) holderStop(f fault) (string, error) {
	c := in.children[f.Target%len(in.children)]
	where := "wherever it was"
	var inCommit *stopMe
	if f.InCommit {
		if err := c.send(cmdArm); err != nil {
			return "", err
		}
		t := time.NewTimer(2 * in.ttl)
		select {
		case m := <-c.stopMe:
			inCommit = &m
		case <-t.C:
			_ = c.send(cmdDisarm)
			where = "wherever it was (it reached no Commit within 2 TTLs)"
		case <-in.stop:
			t.Stop()
			_ = c.send(cmdDisarm)
			return "", nil
		}
		t.Stop()
	}
	if err := c.pause(); err != nil {
		return "", err
	}
	sleep(f.Dur, in.stop)
	err := c.resume()
	if inCommit != nil {
		where = fmt.Sprintf("inside its Commit on %s with fence %d", inCommit.Key, inCommit.Fence)
		if serr := c.send(cmdGo); err == nil {
			err = serr
		}
	}
	return fmt.Sprintf("p%d stopped %s", c.index, where), err
}

// suspend emulates a system suspend of a holder process: its lease clock
// jumps ahead and it stops itself at once, for the fault's length, so that
// real time passes for Redis and keys expire; on resume its lease clock is
// ahead of its Go timers, as CLOCK_BOOTTIME runs ahead of a CLOCK_MONOTONIC
// that stood still. (Go's timers here do see the stop; the jump is the part
// of a suspend they would not have seen.)
func (in *injector) suspend(f fault) (string, error) {
	c := in.children[f.Target%len(in.children)]
	if err := c.suspend(f.Jump); err != nil {
		return "", err
	}
	sleep(f.Dur, in.stop)
	return fmt.Sprintf("p%d suspended, resumed with its lease clock %v ahead", c.index, f.Jump.Round(time.Millisecond)), c.resume()
}

// output serializes what the run prints: fault events and progress lines.
type output struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	log   io.Writer // the fault log file, or nil
}

func (o *output) restart(t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.start = t
}

func (o *output) event(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	line := fmt.Sprintf("chaos: +%v ", time.Since(o.start).Round(100*time.Millisecond)) + fmt.Sprintf(format, args...) + "\n"
	_, _ = io.WriteString(o.w, line)
	if o.log != nil {
		_, _ = io.WriteString(o.log, line)
	}
}

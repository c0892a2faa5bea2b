package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
)

// The faults of lockwatch run holders (runholder.go). Each arms one
// holder's next program (how long it works, whether it ignores SIGTERM,
// what it leaves behind, which --grace its lockwatch gets), waits for it
// to start, and strikes: lockwatch, its program or its whole job stopped
// past the TTL, a child left heartbeating after the program exits, a
// lease lost under a program that ignores SIGTERM. lockwatch run must end
// the program, and what it left, before the key can expire or is
// released: a heartbeat after that is an overlap no loss in Redis
// explains, or work after the run exited.
//
// They run on a lane of their own, beside the main schedule: they touch
// no server, so each lane's effects can still be told apart (the table
// counts an overlap for the lane of its first holder), and make test's
// short runs cover them without growing longer.

// armTTLs is what the schedule plans for a run fault's wait for its
// armed program: the run under way ends (its program works up to 2.5
// TTLs), the next one takes the key.
const armTTLs = 3.0

// runLane reports whether k is a fault of the run holders.
func (k faultKind) runLane() bool {
	switch k {
	case faultRunStop, faultRunJobStop, faultRunProgramStop, faultRunLeaveChild, faultRunIgnoreTerm:
		return true
	}
	return false
}

// Stop signals a run fault sends: SIGSTOP, which nothing can catch (kill
// -STOP, a debugger), or SIGTSTP, a job-control stop (Ctrl-Z, a shell's
// stop of a background job).
var stopSignals = map[string]syscall.Signal{"SIGSTOP": syscall.SIGSTOP, "SIGTSTP": syscall.SIGTSTP}

// How run-ignore-term loses the lease: its lockwatch cut off from the
// lock Redis (its own forwarder; single only, else a stop), or stopped.
const (
	lossCut  = "cut"
	lossStop = "stop"
)

// runFault runs one run-lane fault.
func (in *injector) runFault(f fault) (string, error) {
	h := in.runs[f.Target%len(in.runs)]
	a := &arming{fault: f.N, work: f.Work, grace: f.Grace}
	switch f.Kind {
	case faultRunLeaveChild:
		a.leave, a.childLife = f.Dir, f.Dur
	case faultRunIgnoreTerm:
		a.ignoreTerm = true
	}
	wait := time.Duration(6*armTTLs) * in.ttl
	b, ok := h.arm(a, wait, in.stop)
	if !ok {
		return fmt.Sprintf("%s: no program started for it within %v", h.id, wait), nil
	}
	note := fmt.Sprintf("%s's program pid %d on %s with fence %d", h.id, b.Pid, b.Key, b.Fence)
	if h.refused(a) {
		note += fmt.Sprintf(" (lockwatch refused --grace %v, longer than the margin: it runs with the default)", f.Grace)
	}
	if f.Kind == faultRunLeaveChild {
		// Until the child's work is done: the program's, then its life.
		sleep(time.Duration(b.Until-now())+f.Dur+in.ttl/4, in.stop)
		return fmt.Sprintf("%s left a child (%s) heartbeating for %v after its work", note, f.Dir, f.Dur.Round(time.Millisecond)), nil
	}
	sleep(f.Delay, in.stop)
	lw := h.lockwatchPid(b)
	if lw == 0 {
		return note + ": its lockwatch run had exited before the strike", nil
	}
	struck := now()
	var err error
	switch {
	case f.Kind == faultRunStop:
		note += fmt.Sprintf(": lockwatch (pid %d) stopped", lw)
		err = in.stopFor(b, f.Dur, []int{lw}, syscall.SIGSTOP, []int{lw})
	case f.Kind == faultRunJobStop:
		note += fmt.Sprintf(": lockwatch's job (group %d) stopped with %s", lw, f.Signal)
		err = in.stopFor(b, f.Dur, []int{-lw}, stopSignals[f.Signal], []int{-lw})
	case f.Kind == faultRunProgramStop:
		note += fmt.Sprintf(": the program's group stopped with %s", f.Signal)
		err = in.stopFor(b, f.Dur, []int{-b.Pid}, stopSignals[f.Signal], nil)
		in.stillHeld(h, b, f)
		err = errors.Join(err, kill(-b.Pid, syscall.SIGCONT), kill(-lw, syscall.SIGCONT))
	case f.Dir == lossCut && h.fwd != nil:
		note += ": it ignores SIGTERM; lockwatch cut off from the lock Redis"
		h.fwd.Set(faultproxy.Blackhole)
		in.watchExpiry(b, f.Dur)
		h.fwd.Set(faultproxy.Reset)
		h.fwd.Set(faultproxy.Pass)
	default:
		note += fmt.Sprintf(": it ignores SIGTERM; lockwatch (pid %d) stopped", lw)
		err = in.stopFor(b, f.Dur, []int{lw}, syscall.SIGSTOP, []int{lw})
	}
	if at := in.expiries()[workID{b.Holder, b.Fence}]; at != 0 {
		note += fmt.Sprintf("; its key expired in Redis %v after", time.Duration(at-struck).Round(time.Millisecond))
	}
	return note, err
}

// stopFor sends sig to each of targets (a pid, or minus a process group),
// watches b's key for d (or until the run stops), and sends SIGCONT to
// each of conts.
func (in *injector) stopFor(b beat, d time.Duration, targets []int, sig syscall.Signal, conts []int) error {
	var errs []error
	for _, t := range targets {
		errs = append(errs, kill(t, sig))
	}
	in.watchExpiry(b, d)
	for _, t := range conts {
		errs = append(errs, kill(t, syscall.SIGCONT))
	}
	return errors.Join(errs...)
}

// watchExpiry reads, every TTL/20 for d, what Redis holds for b's key,
// and records when the key of b's lease expired there: the latest moment
// the readings allow (a reading's return plus the TTL left, rounded up),
// so that a heartbeat after it was certainly work after another holder
// could take the key. Nothing is recorded unless the key was seen held by
// b's lease and then gone (or taken) before d ended: while it is held, a
// renewal may still move its expiry.
func (in *injector) watchExpiry(b beat, d time.Duration) {
	end := time.Now().Add(d)
	poll := time.NewTicker(in.ttl / 20)
	defer poll.Stop()
	var expiry int64
	for gone := false; time.Now().Before(end); {
		select {
		case <-in.stop:
			return
		case <-poll.C:
		}
		if gone {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), in.ttl/5)
		info, err := in.inspect(ctx, b.Key)
		cancel()
		switch {
		case err != nil:
		case info.Held && int64(info.Fence) == b.Fence && info.TTL > 0:
			expiry = max(expiry, now()+int64(info.TTL+time.Millisecond))
		case expiry != 0:
			gone = true
			in.mu.Lock()
			in.expired[workID{b.Holder, b.Fence}] = expiry
			in.mu.Unlock()
		}
	}
}

// stillHeld flags a program stopped past the TTL whose key its lockwatch
// still holds: nothing would ever end that lease (a stopped program holds
// its key for ever). Its lockwatch must stop renewing once it stopped, so
// after the fault's 1.5 TTLs or more the key has expired.
func (in *injector) stillHeld(h *runHolder, b beat, f fault) {
	select {
	case <-in.stop: // the run ended the stop early: the key may well be held
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.ttl)
	defer cancel()
	info, err := in.inspect(ctx, b.Key)
	if err == nil && info.Held && int64(info.Fence) == b.Fence {
		in.flag(fmt.Sprintf("%s: fault #%d: %s's program (fence %d) was stopped for %v and its lockwatch run still held %s for it (%v left)",
			f.Kind, f.N, h.id, b.Fence, f.Dur.Round(time.Millisecond), b.Key, info.TTL))
	}
}

// kill sends sig to pid (minus a group); a process already gone is no
// error: the fault found nothing left to hit.
func kill(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("kill %d %v: %w", pid, sig, err)
	}
	return nil
}

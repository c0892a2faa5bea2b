package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// errDown is what every command of a killed job's process fails with:
// nothing it would send arrives.
var errDown = errors.New("demo fault: the process was killed")

// errReplyLost is what a lease command whose reply was dropped returns: the
// command ran in Redis, and the client never learns its outcome.
var errReplyLost = errors.New("demo fault: reply lost (read timeout)")

// redisFaults is a go-redis hook on one replica's lease client: every
// command a Locker sends (acquire, renewal batches, release) goes through
// it. It injects three faults, as a network or a busy Redis would:
//
//   - lost replies: the command runs, but the reply is dropped and the
//     caller sees a timeout at its deadline. An acquire is then unknown
//     although it took the lock (its clean-up reports "released"); a
//     renewal is unknown and the lease is lost.
//   - stalls: for a while every command waits; one whose deadline passes
//     first is never sent (an unknown acquire whose clean-up finds nothing:
//     "absent", or "unresolved" when the clean-up itself times out).
//   - freezes: the replica's process is paused (see replica.pause): commands
//     wait, deadline or not, until it resumes; one whose deadline passed
//     meanwhile is never sent. The Locker's scheduler is the clock that keeps
//     running, as CLOCK_BOOTTIME does through a real pause, so the leases
//     reach their cancel points.
//
// A job's connection has a fourth: down, its process killed, every command
// fails at once, unsent.
type redisFaults struct {
	lossRate float64 // probability that a command's reply is lost
	onLoss   func()  // narrates a lost reply; nil: silent
	frozen   *gate   // the replica's pause
	down     atomic.Bool

	mu         sync.Mutex
	stallUntil time.Time
}

func (f *redisFaults) stall(d time.Duration) {
	f.mu.Lock()
	f.stallUntil = time.Now().Add(d)
	f.mu.Unlock()
}

func (f *redisFaults) stalledUntil() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stallUntil
}

func (f *redisFaults) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *redisFaults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return f.inject(ctx, func() error { return next(ctx, cmd) }, func(err error) { cmd.SetErr(err) })
	}
}

func (f *redisFaults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return f.inject(ctx, func() error { return next(ctx, cmds) }, func(err error) {
			for _, c := range cmds {
				c.SetErr(err)
			}
		})
	}
}

// inject runs send (the command or pipeline) under the faults in force and
// reports a fault's error through fail, as go-redis would a network error.
func (f *redisFaults) inject(ctx context.Context, send func() error, fail func(error)) error {
	if f.down.Load() {
		err := &net.OpError{Op: "write", Net: "tcp", Err: errDown}
		fail(err)
		return err
	}
	if f.frozen.wait(nil) && ctx.Err() != nil {
		fail(ctx.Err())
		return ctx.Err()
	}
	if until := f.stalledUntil(); time.Now().Before(until) {
		t := time.NewTimer(time.Until(until))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			fail(ctx.Err())
			return ctx.Err()
		}
	}
	if f.lossRate > 0 && rand.Float64() < f.lossRate {
		_ = send() // it runs in Redis; its reply never arrives
		if f.onLoss != nil {
			f.onLoss()
		}
		if _, ok := ctx.Deadline(); ok {
			<-ctx.Done()
		}
		err := &net.OpError{Op: "read", Net: "tcp", Err: errReplyLost}
		fail(err)
		return err
	}
	return send()
}

// gate pauses whoever waits on it while it is closed: the "process" of a
// paused replica (its handlers and its Redis traffic).
type gate struct {
	mu     sync.Mutex
	closed chan struct{} // non-nil while paused; closed on resume
}

// pause closes the gate until resume is called.
func (g *gate) pause() (resume func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		return func() {}
	}
	ch := make(chan struct{})
	g.closed = ch
	return sync.OnceFunc(func() {
		g.mu.Lock()
		g.closed = nil
		g.mu.Unlock()
		close(ch)
	})
}

// wait blocks while the gate is closed, or until stop is closed (nil: no
// stop). It reports whether it waited.
func (g *gate) wait(stop <-chan struct{}) bool {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
	case <-stop:
	}
	return true
}

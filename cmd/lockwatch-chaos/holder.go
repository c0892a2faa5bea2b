package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
)

// lockName is the bounded lock name of every lease (a metric attribute).
const lockName = "chaos"

// lockNamespace is the Locker namespace of every holder.
const lockNamespace = "lockwatch-chaos"

// One acquire in waitShare waits for a contended key (lease.Config.Wait,
// for 0.5 to 2 TTLs drawn from the seed in waitSteps steps of TTL/16, each
// with a Locker of its own); the others fail fast.
const (
	waitShare = 3
	waitSteps = 24
)

// holder is one contender writing to the shared registers. A child process
// is one replica of a service with a Locker of its own; the goroutines of
// this process are workers of one replica and share its Locker, so that its
// renewal pipelines carry several leases at once, each at its own point of
// its validity.
type holder struct {
	id     string
	proc   int
	ttl    time.Duration
	work   time.Duration // longest protected work per lease
	keys   []string
	locker *lease.Locker
	// waiting[i] is locker with a wait of waitStep(ttl, i).
	waiting []*lease.Locker
	tel     *telemetry.Telemetry
	regs    *registers
	rng     *rand.Rand
	rec     recorder
	stop    <-chan struct{}
	// pause, if set, is called inside Commit before the writes; it returns
	// once the parent has let the process go on, and reports whether the
	// process was stopped meanwhile for at least a TTL (its lease is then
	// certainly lost, and the write that follows a late completion).
	pause func(key string, fence int64) bool
	seq   int
}

// lockClient is one replica's connection to the lock Redis and its
// Locker.
type lockClient struct {
	client redis.UniversalClient
	locker *lease.Locker
}

func newLockClient(target lockTarget, ttl time.Duration, tel *telemetry.Telemetry) *lockClient {
	client := target.client(ttl)
	locker := lease.NewLocker(client, lease.Config{
		Name:           lockName,
		Namespace:      lockNamespace,
		TTL:            ttl,
		ReleaseTimeout: ttl / 2,
		Telemetry:      tel,
	})
	return &lockClient{client: client, locker: locker}
}

// close waits for the Locker's releases and clean-ups, so that what its
// metrics counted is final.
func (c *lockClient) close() error { return errors.Join(c.locker.Close(), c.client.Close()) }

func newHolder(id string, proc int, locker *lease.Locker, ttl, work time.Duration, keys []string, tel *telemetry.Telemetry,
	regs *registers, seed uint64, rec recorder, stop <-chan struct{}) *holder {
	waiting := make([]*lease.Locker, waitSteps)
	for i := range waiting {
		lk, err := locker.With(lease.Config{Wait: waitStep(ttl, i)})
		if err != nil {
			panic(err)
		}
		waiting[i] = lk
	}
	return &holder{
		id: id, proc: proc, ttl: ttl, work: work, keys: keys, locker: locker, waiting: waiting, tel: tel, regs: regs,
		rng: rand.New(rand.NewPCG(seed, uint64(proc)<<32|uint64(len(id)))), rec: rec, stop: stop,
	}
}

// waitStep is the i-th wait bound of a waiting acquire: 0.5 TTL and i
// sixteenths.
func waitStep(ttl time.Duration, i int) time.Duration { return ttl * time.Duration(8+i) / 16 }

// run loops until stop. Operations are never cut short by the stop: every
// acquire, write and release in the history has its real outcome, and the
// lockwatch metrics count exactly what the history shows.
func (h *holder) run() { loop(h.stop, h.rng, h.once) }

// loop calls once over and over until stop closes, resting 10-50 ms
// between calls as a busy service would: after a release too, since a
// holder that re-acquired at once would starve the others.
func loop(stop <-chan struct{}, rng *rand.Rand, once func()) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		once()
		t := time.NewTimer(time.Duration(10+rng.IntN(40)) * time.Millisecond)
		select {
		case <-t.C:
		case <-stop:
		}
		t.Stop()
	}
}

func (h *holder) base(kind, key string) op {
	return op{Holder: h.id, Proc: h.proc, Kind: kind, Key: key}
}

// once runs one acquire and, if it succeeds, the protected work.
func (h *holder) once() {
	ctx := context.Background()
	key := h.keys[h.rng.IntN(len(h.keys))]
	a := h.base(kindAcquire, key)
	locker := h.locker
	if h.rng.IntN(waitShare) == 0 {
		// A waiting acquire retries with backoff, each attempt with the
		// same owner token: the attempts, their copies and the backoff are
		// paths a fail-fast acquire never takes.
		i := int(h.rng.Float64() * waitSteps)
		a.Wait, locker = waitStep(h.ttl, i), h.waiting[i]
	}
	a.Invoke = now()
	l, err := locker.Acquire(ctx, key)
	a.Return = now()
	switch {
	case err == nil:
		a.Outcome, a.Fence = outAcquired, int64(l.Fence())
	case errors.Is(err, lease.ErrNotAcquired):
		a.Outcome = outContended
	case errors.Is(err, lease.ErrUnknown):
		a.Outcome = outUnknown
	default:
		a.Outcome = outError
	}
	if err != nil && a.Outcome != outContended {
		a.Err = err.Error()
	}
	h.rec.op(a)
	if err != nil {
		return
	}

	rec := leaseRec{Holder: h.id, Proc: h.proc, Key: key, Fence: int64(l.Fence()), Acquired: a.Return}
	// The moment the work learns of the loss: its context is cancelled.
	// done is also the end of the lease's live interval (the overlap check).
	var cancelled, done atomic.Int64
	signalled := make(chan struct{})
	context.AfterFunc(l.Context(), func() {
		t := now()
		done.Store(t)
		if errors.Is(context.Cause(l.Context()), lease.ErrLost) {
			cancelled.Store(t)
		}
		close(signalled)
	})
	errAt := watchErr(l)
	noticed := func() {
		if rec.Cancel == 0 && l.Err() != nil && !errors.Is(l.Err(), lease.ErrReleased) {
			rec.Cancel = now()
		}
	}

	// The protected work, on the lease's context: read the registers (a
	// read on a connection a fault left stale can outlive a loss:
	// leaseRec.Reads), then compute for up to h.work (by default 1.5 TTLs:
	// most leases are renewed at least once, so every fault of the lock
	// Redis finds renewals to break).
	for _, reg := range []string{regRedis, regPG} {
		r := h.base(kindRead, key)
		r.Reg = reg
		r.Invoke = now()
		h.regs.read(l.Context(), &r)
		r.Return = now()
		h.rec.op(r)
	}
	rec.Reads = now()
	work := time.NewTimer(time.Duration(h.rng.Int64N(int64(h.work))))
	select {
	case <-work.C:
	case <-l.Context().Done():
		work.Stop()
	}
	noticed()

	completed := false
	if rec.Cancel == 0 {
		err = l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
			rec.Commit = now()
			// An armed holder-stop stops the process midway through its
			// first write, the guarded one: admitted, its body unfinished.
			midway := func() {
				if h.pause != nil && h.pause(key, token.Fence) {
					rec.Paused = true
				}
			}
			h.seq++
			value := fmt.Sprintf("%s/%d", h.id, h.seq)
			for _, reg := range []string{regGuard, regRedis, regPG} {
				w := h.base(kindWrite, key)
				w.Reg, w.Fence, w.Token, w.Value = reg, token.Fence, token, value
				if reg == regGuard {
					w.Via = guardEntryPoints[h.rng.IntN(len(guardEntryPoints))]
					if w.Via != viaUnary { // a unary message arrives whole
						w.Slow = time.Duration((0.05 + 0.15*h.rng.Float64()) * float64(h.ttl))
					}
				}
				w.Invoke = now()
				h.regs.write(ctx, &w, midway)
				midway = nil
				w.Return = now()
				h.rec.op(w)
			}
			completed = true
			return nil
		})
		rec.Refused = err != nil
		noticed()
	}
	rec.End = now()
	if completed && errors.Is(l.Err(), lease.ErrLost) {
		// What middleware does for a handler that succeeded after its
		// lease was lost: a potential stale write, counted.
		rec.Late = true
		obs.RecorderOf(h.tel).LateCompletion(ctx, lockName)
	}
	rec.Released = now()
	_ = l.Release(ctx)
	<-signalled // Release cancels the context, so the AfterFunc has run or will
	rec.Done, rec.ErrAt = done.Load(), <-errAt
	rec.Lost = errors.Is(l.Err(), lease.ErrLost)
	if lost, ok := errors.AsType[*lease.LostError](l.Err()); ok {
		rec.Reason = string(lost.Reason)
	}
	if c := cancelled.Load(); c != 0 && (rec.Cancel == 0 || c < rec.Cancel) {
		rec.Cancel = c
	}
	h.rec.lease(rec)
}

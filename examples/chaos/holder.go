package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// lockName is the bounded lock name of every lease (a metric attribute).
const lockName = "chaos"

// holder is one contender: its own lease client and Locker, as one replica
// of a service would have, writing to the shared registers.
type holder struct {
	id     string
	proc   int
	ttl    time.Duration
	work   time.Duration // longest protected work per lease
	keys   []string
	client *redis.Client
	locker *lease.Locker
	tel    *telemetry.Telemetry
	regs   *registers
	rng    *rand.Rand
	rec    recorder
	stop   <-chan struct{}
	// pause, if set, is called inside Commit before the writes; it returns
	// once the parent has let the process go on, and reports whether the
	// process was stopped meanwhile for at least a TTL (its lease is then
	// certainly lost, and the write that follows a late completion).
	pause func(key string, fence int64) bool
	seq   int

	closeOnce sync.Once
	closeErr  error
}

// newHolder makes a holder whose lock traffic goes to lockAddr (the fault
// proxy). The client options are the ones lockwatch recommends for a lease
// client: context deadlines bound socket reads, so a renewal against a
// stalled server ends at its deadline.
func newHolder(id string, proc int, lockAddr string, ttl, work time.Duration, keys []string, tel *telemetry.Telemetry,
	regs *registers, seed uint64, rec recorder, stop <-chan struct{}) *holder {
	client := redis.NewClient(&redis.Options{
		Addr:                  lockAddr,
		ContextTimeoutEnabled: true,
		DialTimeout:           ttl,
		PoolSize:              4,
	})
	locker := lease.NewLocker(client,
		lease.WithName(lockName),
		lease.WithNamespace("lockwatch-chaos"),
		lease.WithTTL(ttl),
		lease.WithReleaseTimeout(ttl/2),
		lease.WithTelemetry(tel))
	return &holder{
		id: id, proc: proc, ttl: ttl, work: work, keys: keys, client: client, locker: locker, tel: tel, regs: regs,
		rng: rand.New(rand.NewPCG(seed, uint64(proc)<<32|uint64(len(id)))), rec: rec, stop: stop,
	}
}

func (h *holder) close() error {
	h.closeOnce.Do(func() { h.closeErr = errors.Join(h.locker.Close(), h.client.Close()) })
	return h.closeErr
}

// run loops until stop. Operations are never cut short by the stop: every
// acquire, write and release in the history has its real outcome, and the
// lockwatch metrics count exactly what the history shows.
func (h *holder) run() {
	for {
		select {
		case <-h.stop:
			return
		default:
		}
		h.once()
		// Then try again soon, as a busy service would. After a release
		// too: a holder that re-acquired at once would starve the others.
		h.sleep(time.Duration(10+h.rng.IntN(40)) * time.Millisecond)
	}
}

func (h *holder) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.stop:
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
	a.Invoke = now()
	l, err := h.locker.Acquire(ctx, key)
	a.Return = now()
	switch {
	case err == nil:
		a.Outcome, a.Fence = outAcquired, l.Fence()
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

	rec := leaseRec{Holder: h.id, Proc: h.proc, Key: key, Fence: l.Fence(), Acquired: a.Return}
	// The moment the work learns of the loss: its context is cancelled.
	var cancelled atomic.Int64
	signalled := make(chan struct{})
	context.AfterFunc(l.Context(), func() {
		if errors.Is(context.Cause(l.Context()), lease.ErrLost) {
			cancelled.Store(now())
		}
		close(signalled)
	})
	noticed := func() {
		if rec.Cancel == 0 && l.Err() != nil && !errors.Is(l.Err(), lease.ErrReleased) {
			rec.Cancel = now()
		}
	}

	// The protected work: read the register, then compute on the lease's
	// context for up to h.work (by default 1.5 TTLs: most leases are renewed
	// at least once, so every fault of the lock Redis finds renewals to
	// break).
	for _, reg := range []string{regRedis, regPG} {
		r := h.base(kindRead, key)
		r.Reg = reg
		r.Invoke = now()
		h.regs.read(ctx, &r)
		r.Return = now()
		h.rec.op(r)
	}
	work := time.NewTimer(time.Duration(h.rng.Int64N(int64(h.work))))
	select {
	case <-work.C:
	case <-l.Context().Done():
		work.Stop()
	}
	noticed()

	completed := false
	if rec.Cancel == 0 {
		err = l.Commit(ctx, func(ctx context.Context, token int64) error {
			rec.Commit = now()
			if h.pause != nil && h.pause(key, token) {
				rec.Paused = true
			}
			h.seq++
			value := fmt.Sprintf("%s/%d", h.id, h.seq)
			for _, reg := range []string{regRedis, regPG} {
				w := h.base(kindWrite, key)
				w.Reg, w.Fence, w.Value = reg, token, value
				w.Invoke = now()
				h.regs.write(ctx, &w)
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
		h.tel.LateCompletion(ctx, lockName)
	}
	_ = l.Release(ctx)
	<-signalled // Release cancels the context, so the AfterFunc has run or will
	rec.Lost = errors.Is(l.Err(), lease.ErrLost)
	if c := cancelled.Load(); c != 0 && (rec.Cancel == 0 || c < rec.Cancel) {
		rec.Cancel = c
	}
	h.rec.lease(rec)
}

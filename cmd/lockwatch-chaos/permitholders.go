package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
	"github.com/lockwatch/lockwatch/telemetry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The semaphore the permit holders share: one key of the holders'
// namespace, beside the lock keys and the election's, whose permits
// "s1#0", "s1#1", ... each have registers of their own (a mark per
// permit). Its name labels the lockwatch_permits_* series.
const (
	permitsKey  = "s1"
	permitsName = "chaos-permits"
)

// One acquire in permitWaitShare waits for a permit (Config.Wait of a
// TTL); the others fail fast.
const permitWaitShare = 3

// permitHolder is one replica bounded by the semaphore: it loops, taking
// a permit, reading the permit's registers, working on the permit's
// context, and writing the registers inside Commit with the permit's
// token, under the permit's key. More holders than permits contend.
type permitHolder struct {
	id            string
	ttl, work     time.Duration
	fast, waiting *permits.Semaphore
	regs          *registers
	rng           *rand.Rand
	rec           recorder
	tel           *telemetry.Telemetry // its Locker's, for what middleware would count
	name          string               // the permits' lock name
	stop          <-chan struct{}
	seq           int
}

func (h *permitHolder) run() { loop(h.stop, h.rng, h.once) }

// once takes a permit and, if it got one, works under it.
func (h *permitHolder) once() {
	ctx := context.Background()
	a := op{Holder: h.id, Kind: kindAcquire, Key: permitsKey, Permit: true}
	sem := h.fast
	if h.rng.IntN(permitWaitShare) == 0 {
		sem, a.Wait = h.waiting, h.ttl
	}
	a.Invoke = now()
	p, err := sem.Acquire(ctx)
	a.Return = now()
	a.Outcome = acquireOutcome(err)
	if err != nil && a.Outcome != outContended {
		a.Err = err.Error()
	}
	if p != nil {
		a.Key, a.Fence = p.Key(), int64(p.Fence())
	}
	h.rec.op(a)
	if err == nil {
		base := leaseRec{Holder: h.id, Key: p.Key(), Fence: int64(p.Fence()), Acquired: a.Return, Permit: true}
		h.rec.lease(h.hold(ctx, p, base, p.Key()))
	}
}

// acquireOutcome is the history's outcome of an acquire's error.
func acquireOutcome(err error) string {
	switch {
	case err == nil:
		return outAcquired
	case errors.Is(err, lease.ErrNotAcquired):
		return outContended
	case errors.Is(err, lease.ErrUnknown):
		return outUnknown
	}
	return outError
}

// hold is the work under permit p to its release, as a lock holder's
// (holder.once): it reads readKey's registers and writes p.Key()'s. Its
// record, rec filled in, has a live interval from the acquire to the
// first of its context's end and its release. A shared lease's holders
// work the same way (sharedholders.go).
func (h *permitHolder) hold(ctx context.Context, p *permits.Permit, rec leaseRec, readKey string) leaseRec {
	var cancelled, done atomic.Int64
	signalled := make(chan struct{})
	context.AfterFunc(p.Context(), func() {
		t := now()
		done.Store(t)
		if errors.Is(context.Cause(p.Context()), lease.ErrLost) {
			cancelled.Store(t)
		}
		close(signalled)
	})
	errAt := watchErr(p.Lease)
	noticed := func() {
		if rec.Cancel == 0 && p.Err() != nil && !errors.Is(p.Err(), lease.ErrReleased) {
			rec.Cancel = now()
		}
	}
	// The reads run on the permit's context (leaseRec.Reads says why late
	// work counts from their end).
	for _, reg := range []string{regRedis, regPG} {
		r := op{Holder: h.id, Kind: kindRead, Key: readKey, Reg: reg, Invoke: now()}
		h.regs.read(p.Context(), &r)
		r.Return = now()
		h.rec.op(r)
	}
	rec.Reads = now()
	rest(p.Context(), time.Duration(h.rng.Int64N(int64(h.work))))
	noticed()
	completed := false
	if rec.Cancel == 0 {
		err := p.Commit(ctx, func(ctx context.Context, token fence.Token) error {
			rec.Commit = now()
			h.write(ctx, p.Key(), token)
			completed = true
			return nil
		})
		rec.Refused = err != nil
		noticed()
	}
	rec.End = now()
	if completed && errors.Is(p.Err(), lease.ErrLost) {
		rec.Late = true // counted as middleware counts it (holder.once)
		obs.RecorderOf(h.tel).LateCompletion(ctx, h.name)
	}
	rec.Released = now()
	_ = p.Release(ctx)
	<-signalled
	rec.Done, rec.ErrAt = done.Load(), <-errAt
	rec.Lost = errors.Is(p.Err(), lease.ErrLost)
	if lost, ok := errors.AsType[*lease.LostError](p.Err()); ok {
		rec.Reason = string(lost.Reason)
	}
	if c := cancelled.Load(); c != 0 && (rec.Cancel == 0 || c < rec.Cancel) {
		rec.Cancel = c
	}
	return rec
}

// write writes the holder's next value to the permit's fenced registers
// with the permit's token: each keeps the permit's mark under its key.
func (h *permitHolder) write(ctx context.Context, key string, token fence.Token) {
	h.seq++
	for _, reg := range []string{regRedis, regPG} {
		w := op{Holder: h.id, Kind: kindWrite, Key: key, Reg: reg, Fence: token.Fence, Token: token,
			Value: fmt.Sprintf("%s/%d", h.id, h.seq)}
		w.Invoke = now()
		h.regs.write(ctx, &w, nil)
		w.Return = now()
		h.rec.op(w)
	}
}

// localPermits are the permit holders, each with a Locker of its own (a
// replica each), and the telemetry their semaphores and permits record
// to, apart from the lock holders'.
type localPermits struct {
	clients []*lockClient
	reader  *sdkmetric.ManualReader
	mp      *sdkmetric.MeterProvider
	once    sync.Once
	err     error
}

// startPermitHolders starts cfg.permitHolders holders, s1 and on, of the
// semaphore with cfg.permitLimit permits, as goroutines of wg.
func startPermitHolders(cfg config, target lockTarget, regs *registers, rec recorder, stop <-chan struct{},
	wg *sync.WaitGroup) (*localPermits, error) {
	ps := &localPermits{reader: sdkmetric.NewManualReader()}
	ps.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(ps.reader))
	tel := telemetry.New(telemetry.Config{MeterProvider: ps.mp, Logger: slog.New(slog.DiscardHandler)})
	var list []*permitHolder
	for i := 1; i <= cfg.permitHolders; i++ {
		lc := newLockClient(target, cfg.ttl, tel)
		ps.clients = append(ps.clients, lc)
		pc := permits.Config{Limit: cfg.permitLimit, Name: permitsName}
		fast, err := permits.New(lc.locker, permitsKey, pc)
		if err != nil {
			return ps, err
		}
		pc.Wait = cfg.ttl
		waiting, err := permits.New(lc.locker, permitsKey, pc)
		if err != nil {
			return ps, err
		}
		list = append(list, &permitHolder{id: fmt.Sprintf("s%d", i), ttl: cfg.ttl, work: cfg.maxWork(), fast: fast,
			waiting: waiting, regs: regs, rec: rec, tel: tel, name: permitsName, stop: stop, rng: rand.New(rand.NewPCG(cfg.seed+uint64(500+i), 0x7065726d))}) // "perm"
	}
	for _, h := range list {
		wg.Go(h.run)
	}
	return ps, nil
}

// close closes the holders' Lockers, once they stopped, so that what
// their metrics counted is final. Safe to call more than once.
func (ps *localPermits) close() error {
	ps.once.Do(func() {
		for _, lc := range ps.clients {
			ps.err = errors.Join(ps.err, lc.close())
		}
	})
	return ps.err
}

// finish closes the Lockers and returns what the semaphores and their
// permits' leases counted.
func (ps *localPermits) finish() (permitCounts, error) {
	err := ps.close()
	pc, cerr := collectPermits(context.Background(), ps.reader)
	return pc, errors.Join(err, cerr, ps.mp.Shutdown(context.Background()))
}

// permits reports whether the run has permit holders.
func (c config) permits() bool { return c.permitHolders > 0 }

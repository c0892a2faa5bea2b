package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/permits"
	"github.com/lockwatch/lockwatch/telemetry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The shared lease the readers and writers share: one more key of the
// holders' namespace. A writer writes r1's registers with its token; a
// reader reads them and writes its permit's, "r1#0", "r1#1", ... (a mark
// per permit, as the semaphore's holders do). Its name labels the
// lockwatch_permits_* series.
const (
	sharedKey  = "r1"
	sharedName = "chaos-shared"
	roleReader = "reader"
	roleWriter = "writer"
)

// sharedHolder is one replica using the shared lease, as a reader or as a
// writer. It works as a permit holder does (permitHolder.hold): reads,
// work on the lease's context, writes inside Commit with its token.
// Every writer's acquire waits (for the readers to yield, up to a look's
// period and a TTL each), and a writer rests 1 to 3 TTLs between writes,
// so that the readers get the key too.
type sharedHolder struct {
	w             *permitHolder // the worker: its id, registers, draws and history
	writer        bool
	fast, waiting *permits.Shared // waiting has Config.Wait
	wait          time.Duration
	agreed        map[*permits.Shared]bool // got past the limit's agreement
}

func (h *sharedHolder) run() { loop(h.w.stop, h.w.rng, h.once) }

// once reads or writes once, and a writer then rests.
func (h *sharedHolder) once() {
	ctx, w := context.Background(), h.w
	a := op{Holder: w.id, Kind: kindAcquire, Key: sharedKey, Shared: roleReader}
	sh := h.fast
	if h.writer || w.rng.IntN(permitWaitShare) == 0 {
		sh, a.Wait = h.waiting, h.wait
	}
	take := sh.Read
	if h.writer {
		take, a.Shared = sh.Write, roleWriter
	}
	a.Invoke = now()
	p, err := take(ctx)
	// A writer whose own lease was lost while it waited for the permits
	// returns with its context ended: it was never live.
	ended := p != nil && p.Context().Err() != nil
	a.Return = now()
	a.Outcome = acquireOutcome(err)
	if err != nil && a.Outcome != outContended {
		a.Err = err.Error()
	}
	a.Unagreed = a.Outcome == outError && !h.agreed[sh]
	h.agreed[sh] = h.agreed[sh] || a.Outcome != outError
	if p != nil {
		a.Key, a.Fence = p.Key(), int64(p.Fence())
	}
	w.rec.op(a)
	if err == nil {
		base := leaseRec{Holder: w.id, Key: p.Key(), Fence: int64(p.Fence()), Acquired: a.Return, Shared: a.Shared}
		if h.writer {
			base.Taken = a.Invoke
		}
		r := w.hold(ctx, p, base, sharedKey)
		if ended {
			r.Done = r.Acquired
		}
		w.rec.lease(r)
	}
	if h.writer {
		t := time.NewTimer(w.ttl + time.Duration(w.rng.Int64N(int64(2*w.ttl))))
		defer t.Stop()
		select {
		case <-t.C:
		case <-w.stop:
		}
	}
}

// startSharedHolders starts cfg.sharedReaders readers, rd1 and on, and
// cfg.sharedWriters writers, wr1 and on, of the shared lease with
// cfg.sharedLimit readers' permits, each with a Locker of its own, as
// goroutines of wg.
func startSharedHolders(cfg config, target lockTarget, regs *registers, rec recorder, stop <-chan struct{},
	wg *sync.WaitGroup) (*localPermits, error) {
	ps := &localPermits{reader: sdkmetric.NewManualReader()}
	ps.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(ps.reader))
	tel := telemetry.New(telemetry.Config{MeterProvider: ps.mp, Logger: slog.New(slog.DiscardHandler)})
	var list []*sharedHolder
	for i := 1; i <= cfg.sharedReaders+cfg.sharedWriters; i++ {
		h := &sharedHolder{writer: i > cfg.sharedReaders, wait: cfg.ttl, agreed: map[*permits.Shared]bool{}}
		id := fmt.Sprintf("rd%d", i)
		if h.writer {
			id, h.wait = fmt.Sprintf("wr%d", i-cfg.sharedReaders), 3*cfg.ttl
		}
		lc := newLockClient(target, cfg.ttl, tel)
		ps.clients = append(ps.clients, lc)
		pc := permits.Config{Limit: cfg.sharedLimit, Name: sharedName}
		var err error
		if h.fast, err = permits.NewShared(lc.locker, sharedKey, pc); err != nil {
			return ps, err
		}
		pc.Wait = h.wait
		if h.waiting, err = permits.NewShared(lc.locker, sharedKey, pc); err != nil {
			return ps, err
		}
		h.w = &permitHolder{id: id, ttl: cfg.ttl, work: cfg.maxWork(), regs: regs, rec: rec, tel: tel, name: sharedName,
			stop: stop, rng: rand.New(rand.NewPCG(cfg.seed+uint64(600+i), 0x73686172))} // "shar"
		list = append(list, h)
	}
	for _, h := range list {
		wg.Go(h.run)
	}
	return ps, nil
}

// sharedLeases reports whether the run has shared lease holders.
func (c config) sharedLeases() bool { return c.sharedReaders+c.sharedWriters > 0 }

package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// permitLimit is the semaphores' limit in the hand-off and hot-key cases:
// small, so that most waiters wait.
const permitLimit = 4

// semImpl is one semaphore in the permits benchmarks. open returns an
// instance with connections of its own, taking permits of semaphores of
// limit permits, keyed by the key its waitLock is given.
type semImpl struct {
	name string
	open func(b *testing.B, addr string, sent *atomic.Int64, limit int) waitLock
}

// with is s as a waitImpl of semaphores of limit permits on addr, for
// handoffs and hotKey.
func (s semImpl) with(addr string, limit int) waitImpl {
	return waitImpl{s.name, func(b *testing.B, sent *atomic.Int64) waitLock { return s.open(b, addr, sent, limit) }}
}

// semImpls returns lockwatch's permits (a waiter queued on every permit,
// granted one by a release) beside the re-implementations of Redisson's
// RSemaphore (woken by Pub/Sub, then racing) and redis-semaphore
// (polling every 10 ms); their files say what they send.
func semImpls(ns string) []semImpl {
	return []semImpl{
		{"lockwatch", func(b *testing.B, addr string, sent *atomic.Int64, limit int) waitLock {
			return openPermits(b, addr, sent, limit, ns+"-lockwatch")
		}},
		{"redisson", func(b *testing.B, addr string, sent *atomic.Int64, limit int) waitLock {
			return openRedisson(b, addr, sent, limit, ns)
		}},
		{"redis-semaphore", func(b *testing.B, addr string, sent *atomic.Int64, limit int) waitLock {
			return openZset(b, addr, sent, limit, ns)
		}},
	}
}

// openPermits opens a Locker with telemetry off and its defaults, and a
// permits.Semaphore per key with Wait (queued on every permit, granted
// one by a release), made once and kept, as the package asks.
func openPermits(b *testing.B, addr string, sent *atomic.Int64, limit int, ns string) waitLock {
	tel := telemetryOff()
	lk := lease.NewLocker(waitClient(b, addr, sent), lease.Config{Namespace: ns, Telemetry: tel})
	b.Cleanup(func() { _ = lk.Close() })
	var sems sync.Map
	return func(ctx context.Context, key string) (func() error, error) {
		v, ok := sems.Load(key)
		if !ok {
			s, err := permits.New(lk, key, permits.Config{Limit: limit, Wait: wakeWait})
			if err != nil {
				return nil, err
			}
			v, _ = sems.LoadOrStore(key, s)
		}
		p, err := v.(*permits.Semaphore).Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return func() error { return p.Release(context.Background()) }, nil
	}
}

// BenchmarkPermitsCycle measures one acquire + release of a permit while
// one is free. single: one goroutine on a semaphore of 4 permits;
// parallel16: 16 goroutines on one semaphore of 16 permits (never full,
// but each acquire races the others for the free ones). Per op, besides
// ns/op: cmds/op, the commands the client sent (each command of a
// pipeline counted, as cmds/acq counts them), and cpu-µs/op and
// redis-µs/op as measure reports them.
func BenchmarkPermitsCycle(b *testing.B) {
	loopbackOnly(b, sharedAddr)
	ns := "permcycle" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, impl := range semImpls(ns) {
		for _, c := range []struct {
			mode  string
			limit int
		}{{"single", permitLimit}, {"parallel16", 16}} {
			b.Run(c.mode+"/"+impl.name, func(b *testing.B) {
				var sent atomic.Int64
				lock := impl.open(b, sharedAddr, &sent, c.limit)
				permitCycles(b, lock, &sent, c.mode)
			})
		}
	}
}

// permitCycles runs b.N acquires + releases of lock's semaphore of mode
// (a key of its own: a limit is the semaphore's), from 16 goroutines in
// mode parallel16.
func permitCycles(b *testing.B, lock waitLock, sent *atomic.Int64, mode string) {
	ctx := context.Background()
	one := func() error {
		release, err := lock(ctx, "cycle-"+mode)
		if err != nil {
			return err
		}
		return release()
	}
	if err := one(); err != nil { // the connections and the scripts
		b.Fatal(err)
	}
	measureBy(b, sent, "cmds/op", func() {
		if mode != "parallel16" {
			for b.Loop() {
				if err := one(); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		parallel16(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := one(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkPermits measures how soon a waiter holds a permit after a
// holder starts to release one, and what waiting costs, on semaphores of
// 4 permits, for lockwatch's permits and the two re-implementations.
//
//   - handoff/waiters=1/<impl>: 3 permits held throughout by an instance
//     of their own, a holder of the 4th that releases it after 2 ms and
//     one waiter blocked in a waiting acquire, each an instance of its own
//     (as processes): handoffs' figures, per hand-off from the start of
//     the release to the waiter holding the permit.
//   - hot/waiters=<n>/<impl>: n + 4 goroutines of one instance on one
//     semaphore (n waiting while 4 hold), each acquiring (waiting),
//     releasing at once and acquiring again, on a private redis-server:
//     hotKey's figures (acq/s, cmds/acq, redis-calls/acq, wake-up from
//     the last release's start to an acquire's return). With 4 holders,
//     "the last release" is the latest of any holder, so a wake-up is the
//     time since the latest release, a lower bound of the time since the
//     release that freed the permit; handoffs/s counts acquisitions by
//     another goroutine than the previous acquirer; ahead-bound is n + 3,
//     a mutex's bound, which a semaphore's order need not keep.
//
// It runs once whatever b.N is: run it with -benchtime 1x.
func BenchmarkPermits(b *testing.B) {
	loopbackOnly(b, sharedAddr)
	ns := "permits" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, impl := range semImpls(ns) {
		b.Run("handoff/waiters=1/"+impl.name, func(b *testing.B) {
			w := impl.with(sharedAddr, permitLimit)
			held := w.open(b, new(atomic.Int64))
			for range permitLimit - 1 {
				release, err := held(context.Background(), "handoff")
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = release() }()
			}
			handoffs(b, w, waitClient(b, sharedAddr, new(atomic.Int64)))
		})
	}
	for _, waiters := range []int{16, 256} {
		for _, impl := range semImpls(ns) {
			b.Run("hot/waiters="+strconv.Itoa(waiters)+"/"+impl.name, func(b *testing.B) {
				srv := redistest.Start(b)
				loopbackOnly(b, srv.Addr())
				hotKey(b, srv, impl.with(srv.Addr(), permitLimit), waiters+permitLimit, false)
			})
		}
	}
}

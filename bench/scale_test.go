package bench

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
)

const (
	scaleTTL = 15 * time.Second
	// scaleAcquirers take the leases in parallel, each on a connection of
	// its own, so that 100k acquires take seconds.
	scaleAcquirers = 32
	idleWindow     = 2 * time.Second
)

// BenchmarkScale has one Locker hold 1k, 10k and 100k leases (TTL 15s,
// renewed every 5s) on a private redis-server and reports:
//
//   - B/lease: live heap per held lease (HeapAlloc after GC, before and
//     after acquiring, over n), the lease's context and its place in the
//     renewal and deadline queues included.
//   - renew-%core: CPU time per second spent renewing, as a percentage of
//     one core: this process's user+sys time (getrusage) over a window
//     longer than one renewal period, less the idle rate measured before
//     acquiring, scaled to one renewal of every lease per period (so the
//     batch boundaries inside the window do not matter).
//   - redis-%core: the same for redis-server (INFO cpu).
//   - rtt/renewal: renewal round trips per lease renewed (pipelines).
//   - acquire-us: wall time per lease to acquire all n from 32 goroutines.
//
// It runs once whatever b.N is: run it with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run("leases="+strconv.Itoa(n), func(b *testing.B) { scale(b, n) })
	}
}

func scale(b *testing.B, n int) {
	srv := redistest.Start(b)
	loopbackOnly(b, srv.Addr())
	c := srv.Client(b, func(o *redis.Options) {
		o.ContextTimeoutEnabled = true
		o.PoolSize = scaleAcquirers
	})
	rt := &roundTrips{}
	c.AddHook(rt)
	ctx := context.Background()
	lk := lease.NewLocker(c, lease.Config{Namespace: "scale", TTL: scaleTTL, Telemetry: telemetryOff()})
	b.Cleanup(func() { _ = lk.Close() })

	// Open every connection the acquirers will use before the heap is
	// measured: their buffers are the client's, not the leases'.
	if err := inParallel(scaleAcquirers, 200, func(int) error { return c.Ping(ctx).Err() }); err != nil {
		b.Fatal(err)
	}
	leases := make([]*lease.Lease, n)

	idleCPU, _ := cpuOver(b, srv, idleWindow)

	heap0 := liveHeap()
	start := time.Now()
	var seq atomic.Int64
	err := inParallel(scaleAcquirers, n, func(i int) error {
		l, err := lk.Acquire(ctx, "lease-"+strconv.FormatInt(seq.Add(1), 10))
		leases[i] = l
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	acquired := time.Since(start)
	heap1 := liveHeap()

	// At least one full renewal period, starting once every lease is held.
	window := scaleTTL/3 + time.Second
	rt0, ren0 := rt.n.Load(), rt.renewals.Load()
	cpu, redisCPU := cpuOver(b, srv, window)
	rts, rens := rt.n.Load()-rt0, rt.renewals.Load()-ren0
	if lost := countLost(leases); lost > 0 {
		b.Errorf("%d leases lost while held", lost)
	}
	if rens < int64(n) {
		b.Errorf("%d renewals in %v, want at least one per lease (%d)", rens, window, n)
	}
	// Renewing cost per lease-renewal, times n renewals per period.
	perPeriod := float64(n) / float64(rens) / (scaleTTL / 3).Seconds()
	renewCPU := (cpu.Seconds() - idleCPU.Seconds()/idleWindow.Seconds()*window.Seconds()) * perPeriod
	b.ReportMetric(float64(heap1-heap0)/float64(n), "B/lease")
	b.ReportMetric(100*renewCPU, "renew-%core")
	b.ReportMetric(100*redisCPU.Seconds()*perPeriod, "redis-%core")
	b.ReportMetric(float64(rts)/float64(max(rens, 1)), "rtt/renewal")
	b.ReportMetric(float64(acquired.Microseconds())/float64(n), "acquire-us")
	runtime.KeepAlive(leases)
}

// inParallel runs f(0..n-1) on workers goroutines and returns the first
// error.
func inParallel(workers, n int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// liveHeap is the heap still referenced: HeapAlloc right after a full GC
// (twice, so that finalizers queued by the first have run).
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// cpuOver sleeps for d and returns the CPU time (user + sys) this process
// and srv's redis-server used meanwhile.
func cpuOver(b *testing.B, srv *redistest.Server, d time.Duration) (self, redisServer time.Duration) {
	ctx := context.Background()
	r0, err := redisCPU(ctx, srv.Do)
	if err != nil {
		b.Fatal(err)
	}
	s0 := selfCPU()
	time.Sleep(d)
	s1 := selfCPU()
	r1, err := redisCPU(ctx, srv.Do)
	if err != nil {
		b.Fatal(err)
	}
	return s1 - s0, r1 - r0
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is a redis-server's own user + sys time, from INFO cpu sent
// with do.
func redisCPU(ctx context.Context, do func(context.Context, ...any) (any, error)) (time.Duration, error) {
	reply, err := do(ctx, "INFO", "cpu")
	if err != nil {
		return 0, err
	}
	text, _ := reply.(string)
	var total float64
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// countLost counts the leases that are no longer active.
func countLost(leases []*lease.Lease) int {
	n := 0
	for _, l := range leases {
		if l.Err() != nil {
			n++
		}
	}
	return n
}

package bench

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/redis/go-redis/v9"
)

const (
	// hotRun is how long the window of a hot-key case runs; hotRunHeavy
	// for 256 waiters with an instance each, whose hand-offs are fewer a
	// second (every grant reaches every instance waiting), to take enough
	// of them.
	hotRun      = time.Second
	hotRunHeavy = 2 * time.Second
	// hotWarmup bounds the warm-up before the window: the time for every
	// waiter to hold the key once.
	hotWarmup = 2 * time.Second
	// pingEvery is the pause between the PINGs sent through a hot-key
	// window.
	pingEvery = time.Millisecond
)

// hotWindow is how long a hot-key case of waiters runs.
func hotWindow(waiters int, own bool) time.Duration {
	if own && waiters > 16 {
		return hotRunHeavy
	}
	return hotRun
}

// subscribeCmds are the Pub/Sub commands go-redis sends outside its hooks.
// Scripts cannot call them, so the server's counts are the clients'.
var subscribeCmds = []string{"subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "psubscribe", "punsubscribe"}

// commandStats returns the calls of every command srv ran, from INFO
// commandstats, less the INFO calls themselves.
func commandStats(b *testing.B, srv *redistest.Server) map[string]int64 {
	reply, err := srv.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	text, _ := reply.(string)
	calls := map[string]int64{}
	for line := range strings.SplitSeq(text, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "cmdstat_")), ":calls=")
		if !ok || name == "info" || strings.HasPrefix(line, "#") {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			b.Fatalf("INFO commandstats: %q: %v", line, err)
		}
		calls[name] = v
	}
	return calls
}

// hotTally is what the waiters of one hot-key case saw. Instants are in
// ns since start on the monotonic clock.
type hotTally struct {
	start time.Time
	// from is when the window opened (after the warm-up; MaxInt64 before);
	// released is when the last holder started its release; ended is
	// acquisitions when the window ended (-1 before).
	from, released, ended                atomic.Int64
	acquisitions, handoffs, failed, last atomic.Int64
	warm                                 atomic.Int64 // waiters that have held the key
	// counts are the acquisitions of each waiter (waiter id at id−1);
	// endCounts a copy of them when the window ended (nil before).
	counts    []atomic.Int64
	endCounts atomic.Pointer[[]int64]

	mu     sync.Mutex
	wakes  []time.Duration // per hand-off to another waiter in the window
	ahead  []int64         // per acquire called in the window
	passed []int64         // per acquire called in the window
}

func (t *hotTally) now() int64 { return int64(time.Since(t.start)) }

// add merges one waiter's figures, once it is done.
func (t *hotTally) add(wakes []time.Duration, ahead, passed []int64) {
	t.mu.Lock()
	t.wakes = append(t.wakes, wakes...)
	t.ahead = append(t.ahead, ahead...)
	t.passed = append(t.passed, passed...)
	t.mu.Unlock()
}

// snapshot copies every waiter's acquisitions into into and returns it.
func (t *hotTally) snapshot(into []int64) []int64 {
	for i := range t.counts {
		into[i] = t.counts[i].Load()
	}
	return into
}

// passes is the most acquisitions by any one waiter between the counts
// from and to, less one: how many times that waiter went round and was
// served again.
func passes(from, to []int64) int64 {
	most := int64(1)
	for i, n := range from {
		most = max(most, to[i]-n)
	}
	return most - 1
}

// waiter is waiter id's loop until ctx ends: take the key (waiting),
// release it at once, again.
func (t *hotTally) waiter(ctx context.Context, b *testing.B, lock waitLock, id, waiters int64) {
	var wakes []time.Duration
	var ahead, passed []int64
	called, returned := make([]int64, waiters), make([]int64, waiters)
	defer func() { t.add(wakes, ahead, passed) }()
	for {
		start, before := t.now(), t.acquisitions.Load()
		t.snapshot(called)
		release, err := lock(ctx, "hot")
		at, measured := t.now(), start >= t.from.Load()
		switch {
		case ctx.Err() != nil:
			if err == nil {
				_ = release()
			}
			if end := t.endCounts.Load(); measured && end != nil { // still waiting when the window ended
				ahead = append(ahead, max(t.ended.Load()-before, 0))
				passed = append(passed, passes(called, *end))
			}
			return
		case err != nil:
			// Counted, not fatal: an acquire that times out under the
			// load of the waiters is a result (lockwatch's ErrUnknown).
			// The waiter waits again.
			if t.failed.Add(1) > 100*waiters {
				b.Error(err)
				return
			}
			continue
		}
		if n := t.acquisitions.Add(1) - 1 - before; measured {
			ahead = append(ahead, n)
			passed = append(passed, passes(called, t.snapshot(returned)))
		}
		if t.counts[id-1].Add(1) == 1 {
			t.warm.Add(1)
		}
		if prev := t.last.Swap(id); prev != id && prev != 0 {
			t.handoffs.Add(1)
			if r := t.released.Load(); r >= t.from.Load() {
				wakes = append(wakes, time.Duration(at-r))
			}
		}
		t.released.Store(t.now())
		if err := release(); err != nil && ctx.Err() == nil {
			b.Error(err)
			return
		}
	}
}

// warmUp waits until every waiter has held the key once (its instance has
// its connections and its scripts loaded) or hotWarmup has passed.
func (t *hotTally) warmUp(waiters int) {
	for end := time.Now().Add(hotWarmup); t.warm.Load() < int64(waiters) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
}

// pingThrough sends a PING to addr every pingEvery from a client of its
// own until d has passed, and returns the round trips.
func pingThrough(b *testing.B, addr string, d time.Duration) []time.Duration {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, ContextTimeoutEnabled: true})
	defer c.Close()
	var rtts []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(pingEvery) {
		start := time.Now()
		if err := c.Ping(context.Background()).Err(); err != nil {
			b.Error(err) // not Fatal: the waiters still run
			break
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

// hotKey runs waiters goroutines of impl on one key of srv, each taking
// the key, releasing it at once and waiting again; own gives each waiter
// an instance of its own. After warmUp it measures a window of hotWindow
// and reports, from the window alone:
//
//   - acq/s: acquisitions per second of the window; handoffs/s: those by
//     another waiter than the last holder.
//   - cmds/acq: commands the clients sent per acquisition (hooks on the
//     clients, plus the Pub/Sub subscribe commands, which bypass them,
//     counted by the server); redis-calls/acq: every command Redis ran
//     (INFO commandstats, less the PINGs below), the ones scripts call
//     included.
//   - failed: acquires that returned an error (an acquire timeout under
//     the load), after which the waiter waits again.
//   - wake-p50-µs, wake-p90-µs, wake-p99-µs, wake-max-µs: per hand-off
//     to another waiter, the time from the instant the previous holder
//     called its release to the instant the next holder's acquire
//     returned, both read on this process's monotonic clock. A waiter
//     that takes the key back from itself is not a hand-off (a polling
//     library's hand-offs are the polls that came in time: handoffs/s
//     shows how few they are).
//   - ping-p50-µs, ping-p99-µs: round trips of a PING sent every 1ms from
//     a client of its own to the same server through the window: the
//     floor of the same seconds.
//   - ahead-p99, ahead-max: per acquire, the acquisitions by other waiters
//     between the start of its call and its return (read from one counter
//     that each acquisition increments once it has returned); an acquire
//     still waiting when the window ends counts those until then: the
//     hand-offs ahead of it. ahead-bound is waiters−1: served in arrival
//     order, an acquire waits for every other waiter at most once after
//     it arrives. Arrival is when its enqueue reaches Redis, after the
//     call starts, so FIFO's true bound is waiters−1 plus the acquisitions
//     during that round trip: ahead-max can exceed ahead-bound a little.
//     A polling waiter has no bound.
//   - passed-p99, passed-max: per acquire, the most acquisitions by any
//     one other waiter during the same wait, less one: how many times one
//     waiter went round and was served again ahead of it (each waiter's
//     own counter, copied at the call's start and compared at its
//     return). Served in arrival order it is 0, or 1 when the other's
//     re-queue and this enqueue were in flight together; a polling
//     waiter's grows with its wait.
func hotKey(b *testing.B, srv *redistest.Server, impl waitImpl, waiters int, own bool) {
	var sent atomic.Int64
	locks := make([]waitLock, waiters)
	for i := range locks {
		if i == 0 || own {
			locks[i] = impl.open(b, &sent)
		} else {
			locks[i] = locks[0]
		}
	}
	// Stopped by a cancel, not a deadline: a deadline on ctx would end
	// waits with the libraries' own deadline errors, and shorten the last
	// acquires' own timeouts.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := &hotTally{start: time.Now(), counts: make([]atomic.Int64, waiters)}
	t.from.Store(math.MaxInt64)
	t.ended.Store(-1)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() { t.waiter(ctx, b, locks[i], int64(i+1), int64(waiters)) })
	}
	t.warmUp(waiters)
	before, sentBefore := commandStats(b, srv), sent.Load()
	acq, handoffs, failed := t.acquisitions.Load(), t.handoffs.Load(), t.failed.Load()
	t.from.Store(t.now())
	begin := time.Now()
	pings := pingThrough(b, srv.Addr(), hotWindow(waiters, own))
	window := time.Since(begin).Seconds()
	t.ended.Store(t.acquisitions.Load())
	end := t.snapshot(make([]int64, waiters))
	t.endCounts.Store(&end)
	acq, handoffs, failed = t.acquisitions.Load()-acq, t.handoffs.Load()-handoffs, t.failed.Load()-failed
	sentIn, after := sent.Load()-sentBefore, commandStats(b, srv)
	cancel()
	wg.Wait()
	calls := -int64(len(pings))
	for name, n := range after {
		calls += n - before[name]
	}
	subs := int64(0)
	for _, name := range subscribeCmds {
		subs += after[name] - before[name]
	}
	n := float64(max(acq, 1))
	b.ReportMetric(float64(acq)/window, "acq/s")
	b.ReportMetric(float64(handoffs)/window, "handoffs/s")
	b.ReportMetric(float64(sentIn+subs)/n, "cmds/acq")
	b.ReportMetric(float64(calls)/n, "redis-calls/acq")
	b.ReportMetric(float64(failed), "failed")
	t.report(b, pings, waiters)
}

// report reports the wake-ups, the PINGs, the acquisitions ahead and the
// passes.
func (t *hotTally) report(b *testing.B, pings []time.Duration, waiters int) {
	reportQuantiles(b, t.wakes, "wake-", time.Microsecond, "µs", 0.50, 0.90, 0.99, 1)
	reportQuantiles(b, pings, "ping-", time.Microsecond, "µs", 0.50, 0.99)
	b.ReportMetric(float64(quantile(t.ahead, 0.99)), "ahead-p99")
	b.ReportMetric(float64(quantile(t.ahead, 1)), "ahead-max")
	b.ReportMetric(float64(waiters-1), "ahead-bound")
	b.ReportMetric(float64(quantile(t.passed, 0.99)), "passed-p99")
	b.ReportMetric(float64(quantile(t.passed, 1)), "passed-max")
}

func TestPassesCountsOneWaiterServedAgain(t *testing.T) {
	from := []int64{3, 0, 7, 2}
	for _, c := range []struct {
		to   []int64
		want int64
	}{
		{[]int64{3, 0, 7, 2}, 0}, // none served
		{[]int64{4, 1, 8, 3}, 0}, // each served once: many ahead, none passed twice
		{[]int64{4, 2, 8, 3}, 1}, // one served twice
		{[]int64{3, 5, 9, 2}, 4}, // one served five times, another twice
	} {
		if got := passes(from, c.to); got != c.want {
			t.Errorf("passes(%v, %v) = %d, want %d", from, c.to, got, c.want)
		}
	}
}

package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

const (
	// wakeHold is how long the holder keeps the key while the waiter
	// waits: long enough that the waiter's first attempt has failed and
	// it is waiting (or polling) when the release starts.
	wakeHold = 2 * time.Millisecond
	// wakeHandoffs hand-offs are measured per library, after wakeWarmup
	// that open the connections and load the scripts: enough for a p99
	// of five samples above it.
	wakeHandoffs = 500
	wakeWarmup   = 20
	// wakeWait bounds every waiting acquire; no wait here comes near it.
	wakeWait = time.Minute
)

// waitLock takes key, waiting while another holds it, and returns the
// release.
type waitLock func(ctx context.Context, key string) (release func() error, err error)

// waitImpl is one library in the wake-up benchmarks. open returns an
// instance with connections of its own, as another process would have
// (every instance of one waitImpl shares its keys); the commands it sends
// are added to sent.
type waitImpl struct {
	name string
	open func(b *testing.B, sent *atomic.Int64) waitLock
}

// commands counts the commands a go-redis client sends, each command of a
// pipeline as one. A Pub/Sub connection's (S)SUBSCRIBE and UNSUBSCRIBE
// bypass go-redis's hooks: subscribeCalls counts those on the server.
type commands struct{ n *atomic.Int64 }

func (c commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// countedRueidis counts the commands rueidislock sends through its client:
// its scripts all go through Do (Lua.Exec).
type countedRueidis struct {
	rueidis.Client
	n *atomic.Int64
}

func (c countedRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countedRueidis) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

// waitClient returns a go-redis client of addr as every library here gets
// it (ContextTimeoutEnabled, the default pool), counting into sent.
func waitClient(b *testing.B, addr string, sent *atomic.Int64) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	c.AddHook(commands{sent})
	return c
}

// lockwatchWait opens Lockers with telemetry off on clients from client,
// waiting with lease.Config.Wait (queued, granted the key by the release)
// and the other settings at their defaults.
func lockwatchWait(ns string, client func(b *testing.B, sent *atomic.Int64) redis.UniversalClient) func(*testing.B, *atomic.Int64) waitLock {
	return func(b *testing.B, sent *atomic.Int64) waitLock {
		lk := lease.NewLocker(client(b, sent), lease.Config{Namespace: ns, Wait: wakeWait, Telemetry: telemetryOff()})
		b.Cleanup(func() { _ = lk.Close() })
		return func(ctx context.Context, key string) (func() error, error) {
			l, err := lk.Acquire(ctx, key)
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(context.Background()) }, nil
		}
	}
}

// pollBackoff is the delay before the n-th retry (n ≥ 1) of
// redislock.ExponentialBackoff(time.Millisecond, 100*time.Millisecond),
// for go-redsync: 4, 8, 16, 32, 64, then 100ms.
func pollBackoff(n int) time.Duration {
	return min(max(time.Duration(2<<min(n, 24))*time.Millisecond, time.Millisecond), 100*time.Millisecond)
}

// waitImpls returns the libraries on the single node at addr: lockwatch,
// rueidislock with its defaults (woken by client-side-caching
// invalidations; 2 of 3 keys), bsm/redislock and go-redsync, both polling
// with exponential backoff 1–100ms.
func waitImpls(addr, ns string) []waitImpl {
	return []waitImpl{
		{"lockwatch", lockwatchWait(ns+"-lockwatch", func(b *testing.B, sent *atomic.Int64) redis.UniversalClient {
			return waitClient(b, addr, sent)
		})},
		{"rueidislock", func(b *testing.B, sent *atomic.Int64) waitLock {
			lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
				KeyPrefix:    ns + "-rueidislock",
				ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
				ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
					c, err := rueidis.NewClient(o)
					if err != nil {
						return nil, err
					}
					return countedRueidis{c, sent}, nil
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(lk.Close)
			return func(ctx context.Context, key string) (func() error, error) {
				_, cancel, err := lk.WithContext(ctx, key)
				if err != nil {
					return nil, err
				}
				return func() error { cancel(); return nil }, nil
			}
		}},
		{"redislock", func(b *testing.B, sent *atomic.Int64) waitLock {
			rl := redislock.New(waitClient(b, addr, sent))
			return func(ctx context.Context, key string) (func() error, error) {
				wctx, cancel := context.WithTimeout(ctx, wakeWait)
				defer cancel()
				l, err := rl.Obtain(wctx, ns+"-redislock:"+key, cycleTTL,
					&redislock.Options{RetryStrategy: redislock.ExponentialBackoff(time.Millisecond, 100*time.Millisecond)})
				if err != nil {
					return nil, err
				}
				return func() error { return l.Release(context.Background()) }, nil
			}
		}},
		{"redsync", func(b *testing.B, sent *atomic.Int64) waitLock {
			rs := redsync.New(goredis.NewPool(waitClient(b, addr, sent)))
			return func(ctx context.Context, key string) (func() error, error) {
				m := rs.NewMutex(ns+"-redsync:"+key, redsync.WithExpiry(cycleTTL),
					redsync.WithTries(1<<20), redsync.WithRetryDelayFunc(pollBackoff))
				if err := m.LockContext(ctx); err != nil {
					return nil, err
				}
				return func() error { _, err := m.UnlockContext(context.Background()); return err }, nil
			}
		}},
	}
}

// BenchmarkWakeup measures how soon a waiter holds a key after its holder
// starts to release it, and what waiting costs on a hot key.
//
//   - handoff/<library>: one holder that releases after 2ms and one waiter
//     blocked in a waiting acquire of the same key, each an instance of
//     its own (as two processes). Per hand-off, the time from the start of
//     the holder's release to the waiter holding the key: p50, p90, p99 and
//     max in µs over 500 hand-offs. During every hold a PING goes to the
//     same server from a client of its own: ping-p50-µs and ping-p99-µs are
//     the round-trip floor measured in the same seconds. unwaited counts
//     hand-offs left out because the waiter had not started its acquire 1ms
//     before the release (it might not have been waiting). Single node, and
//     lockwatch on a 3-master Cluster.
//   - hot/<layout>/waiters=<n>/<library>: n goroutines (16 or 256) on one
//     key, each acquiring (waiting), releasing at once and acquiring again,
//     on a private redis-server: a warm-up until every waiter has held the
//     key once (at most 2s), then a window of one second (two for 256
//     waiters with an instance each, whose hand-offs are fewer). Layout
//     shared: all waiters on one instance (one process); own: an instance
//     per waiter (n processes). lockwatch, rueidislock and redislock in
//     every layout, go-redsync at 16 shared. The figures are hotKey's.
//
// It runs once whatever b.N is: run it with -benchtime 1x.
func BenchmarkWakeup(b *testing.B) {
	loopbackOnly(b, sharedAddr)
	ns := "wake" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, impl := range waitImpls(sharedAddr, ns) {
		b.Run("handoff/"+impl.name, func(b *testing.B) {
			handoffs(b, impl, waitClient(b, sharedAddr, new(atomic.Int64)))
		})
	}
	b.Run("handoff/lockwatch-cluster", func(b *testing.B) {
		cluster := redistest.StartCluster(b, 3)
		clusterClient := func(b *testing.B, sent *atomic.Int64) *redis.ClusterClient {
			c := cluster.Client(b, func(o *redis.ClusterOptions) { o.ContextTimeoutEnabled = true })
			c.AddHook(commands{sent})
			return c
		}
		impl := waitImpl{"lockwatch-cluster", lockwatchWait(ns+"-cluster", func(b *testing.B, sent *atomic.Int64) redis.UniversalClient {
			return clusterClient(b, sent)
		})}
		handoffs(b, impl, clusterClient(b, new(atomic.Int64)))
	})
	every := []string{"lockwatch", "rueidislock", "redislock"}
	for _, c := range []struct {
		layout  string
		waiters int
		impls   []string
	}{
		{"shared", 16, append(every, "redsync")},
		{"own", 16, every},
		{"shared", 256, every},
		{"own", 256, every},
	} {
		for _, name := range c.impls {
			b.Run("hot/"+c.layout+"/waiters="+strconv.Itoa(c.waiters)+"/"+name, func(b *testing.B) {
				srv := redistest.Start(b)
				loopbackOnly(b, srv.Addr())
				for _, impl := range waitImpls(srv.Addr(), ns) {
					if impl.name == name {
						hotKey(b, srv, impl, c.waiters, c.layout == "own")
					}
				}
			})
		}
	}
}

// pinger is what handoffs sends a PING with during every hold.
type pinger interface {
	Ping(ctx context.Context) *redis.StatusCmd
}

// handoffs measures wakeHandoffs hand-offs of one key from a holder to a
// waiter of impl, pinging through ping during every hold.
func handoffs(b *testing.B, impl waitImpl, ping pinger) {
	ctx := context.Background()
	var sent atomic.Int64
	holder, waiter := impl.open(b, &sent), impl.open(b, &sent)
	key := "handoff"
	type acquired struct {
		called, at time.Time
		err        error
	}
	start, got := make(chan struct{}), make(chan acquired, 1) // buffered: a failing b never blocks the waiter
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(start)
	wg.Go(func() {
		for range start {
			called := time.Now()
			release, err := waiter(ctx, key)
			a := acquired{called: called, at: time.Now(), err: err}
			if err == nil {
				a.err = release()
			}
			got <- a
		}
	})
	lat := make([]time.Duration, 0, wakeHandoffs)
	pings := make([]time.Duration, 0, wakeHandoffs)
	unwaited := 0
	for i := 0; len(lat) < wakeHandoffs; i++ {
		release, err := holder(ctx, key) // free: the waiter released it
		if err != nil {
			b.Fatal(err)
		}
		start <- struct{}{}
		held := time.Now()
		if err := ping.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		pings = append(pings, time.Since(held))
		time.Sleep(wakeHold - time.Since(held))
		released := time.Now()
		if err := release(); err != nil {
			b.Fatal(err)
		}
		a := <-got
		switch {
		case a.err != nil:
			b.Fatal(a.err)
		case i < wakeWarmup:
		case a.called.After(released.Add(-wakeHold / 2)):
			unwaited++
		default:
			lat = append(lat, a.at.Sub(released))
		}
	}
	reportQuantiles(b, lat, "", time.Microsecond, "µs", 0.50, 0.90, 0.99, 1)
	reportQuantiles(b, pings, "ping-", time.Microsecond, "µs", 0.50, 0.99)
	b.ReportMetric(float64(len(lat)), "handoffs")
	b.ReportMetric(float64(unwaited), "unwaited")
}

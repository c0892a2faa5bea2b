package bench

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
)

const (
	lossTTL    = 2 * time.Second
	lossLeases = 500
	// The leases are taken in lossBursts bursts lossGap apart: more than
	// the scheduler's batching slack (TTL/12) apart, so that each burst
	// stays a renewal batch of its own and the batches meet the stall at
	// different points of their renewal cycle; all within one renewal
	// period (TTL/3), so that no renewal runs while leases are taken.
	lossBursts = 3
	lossGap    = 220 * time.Millisecond
)

// BenchmarkLossDetection holds 500 leases (TTL 2s, so renewal every 667ms
// and a renewal timeout of TTL/5 = 400ms) on a client with
// ContextTimeoutEnabled, then stops redis-server with SIGSTOP and records,
// per lease, when its context is cancelled (context.AfterFunc):
//
//   - stall-*-ms: from the SIGSTOP to the cancel.
//   - send-*-ms: from the send of the renewal that met the stall (the
//     lease's last one, timestamped by a go-redis hook as it entered the
//     client) to the cancel. The goal compares its p99 with the renewal
//     timeout + 20ms.
//   - expired: leases cancelled only after their key could have expired in
//     Redis (last confirmed send + TTL); must be 0. margin-min-ms is the
//     smallest time left between a cancel and that instant.
//
// It runs once whatever b.N is: run it with -benchtime 1x.
func BenchmarkLossDetection(b *testing.B) {
	b.Run("leases="+strconv.Itoa(lossLeases), func(b *testing.B) { lossDetection(b, lossLeases) })
}

// sends timestamps every lockwatch script command by its first key (the
// lock key) as it enters the client: the last send, and the last send that
// Redis confirmed.
type sends struct {
	renewals  atomic.Int64 // renewal commands sent
	mu        sync.Mutex
	stopped   bool
	lastKey   string
	last      map[string]time.Time
	confirmed map[string]time.Time
}

func (s *sends) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *sends) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t := time.Now()
		countRenewals(&s.renewals, cmd)
		s.sent([]redis.Cmder{cmd}, t)
		err := next(ctx, cmd)
		s.answered([]redis.Cmder{cmd}, t)
		return err
	}
}

func (s *sends) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t := time.Now()
		countRenewals(&s.renewals, cmds...)
		s.sent(cmds, t)
		err := next(ctx, cmds)
		s.answered(cmds, t)
		return err
	}
}

// scriptKey returns KEYS[1] of an EVAL or EVALSHA, or "".
func scriptKey(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) < 4 {
		return ""
	}
	name, _ := args[0].(string)
	if !strings.EqualFold(name, "evalsha") && !strings.EqualFold(name, "eval") {
		return ""
	}
	key, _ := args[3].(string)
	return key
}

func (s *sends) sent(cmds []redis.Cmder, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	for _, cmd := range cmds {
		if k := scriptKey(cmd); k != "" {
			s.last[k], s.lastKey = t, k
		}
	}
}

// answered records the sends Redis confirmed: a renewal answered 1, an
// acquire answered {1, fence}.
func (s *sends) answered(cmds []redis.Cmder, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	for _, cmd := range cmds {
		k := scriptKey(cmd)
		c, ok := cmd.(*redis.Cmd)
		if k == "" || !ok || c.Err() != nil {
			continue
		}
		switch v := c.Val().(type) {
		case int64:
			ok = v == 1
		case []any:
			ok = len(v) > 0 && v[0] == int64(1)
		default:
			ok = false
		}
		if ok {
			s.confirmed[k] = t
		}
	}
}

func lossDetection(b *testing.B, n int) {
	srv := redistest.Start(b)
	loopbackOnly(b, srv.Addr())
	c := srv.Client(b, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	rec := &sends{last: map[string]time.Time{}, confirmed: map[string]time.Time{}}
	c.AddHook(rec)
	lk := lease.NewLocker(c, lease.Config{Namespace: "loss", TTL: lossTTL, Telemetry: telemetryOff()})
	b.Cleanup(func() { _ = lk.Close() })
	renewalTimeout := lossTTL / 5 // lease.Config.RenewalTimeout's default
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		b.Fatal(err)
	}

	// One acquirer, so that the hook's last key is this lease's lock key.
	lockKeys := make([]string, n)
	cancelled := make([]time.Time, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(lossGap * time.Duration(i*lossBursts/n))))
		l, err := lk.Acquire(ctx, "lease-"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		rec.mu.Lock()
		lockKeys[i] = rec.lastKey
		rec.mu.Unlock()
		wg.Add(1)
		context.AfterFunc(l.Context(), func() {
			cancelled[i] = time.Now()
			wg.Done()
		})
	}
	if rec.renewals.Load() != 0 {
		b.Fatalf("renewals ran while the leases were taken (%v): the lock keys cannot be told apart", time.Since(start))
	}
	// Every lease renewed at least once, and the stall lands anywhere in
	// their renewal cycles.
	time.Sleep(lossTTL/3 + lossGap*lossBursts + rand.N(lossTTL/3))
	if got := rec.renewals.Load(); got < int64(n) {
		b.Fatalf("%d renewals before the stall, want at least %d", got, n)
	}

	stall := time.Now()
	if err := srv.Pause(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * lossTTL):
		_ = srv.Resume()
		b.Fatalf("leases still not cancelled %v after the stall", 2*lossTTL)
	}
	rec.mu.Lock()
	rec.stopped = true
	rec.mu.Unlock()
	if err := srv.Resume(); err != nil {
		b.Fatal(err)
	}

	var fromStall, fromSend []time.Duration
	expired, noRenewal := 0, 0
	minMargin := time.Duration(1 << 62)
	for i, k := range lockKeys {
		last, confirmed := rec.last[k], rec.confirmed[k]
		if k == "" || confirmed.IsZero() {
			b.Fatalf("lease %d: no confirmed send recorded for its lock key %q", i, k)
		}
		fromStall = append(fromStall, cancelled[i].Sub(stall))
		if last.Equal(confirmed) {
			noRenewal++ // lost at its cancel point with no renewal in flight
		} else {
			fromSend = append(fromSend, cancelled[i].Sub(last))
		}
		margin := confirmed.Add(lossTTL).Sub(cancelled[i])
		minMargin = min(minMargin, margin)
		if margin <= 0 {
			expired++
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	reportQuantiles(b, fromStall, "stall-", time.Millisecond, "ms", 0.50, 0.99, 1)
	reportQuantiles(b, fromSend, "send-", time.Millisecond, "ms", 0.50, 0.99, 1)
	b.ReportMetric(ms(renewalTimeout), "renewal-timeout-ms")
	b.ReportMetric(float64(expired), "expired")
	b.ReportMetric(float64(noRenewal), "no-renewal")
	b.ReportMetric(ms(minMargin), "margin-min-ms")
}

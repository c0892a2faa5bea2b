package lease

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/groupcommit"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/suspend"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/telemetry"
)

// A host that resumes from a suspend finds its leases past their cancel
// point by the boot clock while Go's timers have not moved: the context
// must end at once, not when the scheduler's next timer fires.
func TestContextEndsPromptlyAfterASuspend(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{TTL: 3 * time.Second})
	waitIdle(t, lk)
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()

	suspend.Emulate(3 * time.Second) // nothing looks at the lease meanwhile
	resumed := time.Now()
	cause := waitDone(t, l, 2*time.Second)
	late := time.Since(resumed)
	assert.Equal(t, LossDeadline, lossReason(t, cause))
	assert.Less(t, late, 3*schedulerPoll, "the context ended %v after the resume", late)

	// Whoever looks first ends the lease: once Err has reported the loss,
	// the context is done, whatever the scheduler's timers say.
	l2, err := lk.Acquire(ctx, "k2")
	require.NoError(t, err)
	defer func() { _ = l2.Release(ctx) }()
	suspend.Emulate(3 * time.Second)
	require.ErrorIs(t, l2.Err(), ErrLost)
	select {
	case <-l2.Context().Done():
	default:
		t.Error("Err reported the loss, the context is still live")
	}
}

// A caller's deadline centuries away is no deadline at all, not one that
// wraps into the past.
func TestAFarCallerDeadlineIsNoDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel()
	srv := redistest.Start(t)
	l, err := newLocker(t, srv.Client(t), Config{}).Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// Under maxmemory with noeviction Redis refuses writes. A bar is a
// precaution: a contended acquire must still answer contended (not turn
// unknown, which ends a wait), and a release of a key that expired must
// still say it was not held.
func TestAFullRedisStillAnswersContendedAndNotHeld(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{})
	holder, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	gone, err := lk.Acquire(ctx, "gone")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "gone")
	require.NoError(t, c.Del(ctx, lockKey).Err()) // as if it expired

	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	t.Cleanup(func() { _ = c.ConfigSet(context.Background(), "maxmemory", "0").Err() })
	other := newLocker(t, srv.Client(t), Config{Namespace: lk.set.Namespace})
	_, err = other.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, gone.Release(ctx), ErrNotHeld)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
	require.NoError(t, holder.Release(ctx))
}

// A renewal batch that carries one lease close to its cancel point (say one
// whose acquire reply came late) must give every other lease in it the
// full renewal timeout: they were healthy and must stay so.
func TestANearDeadlineLeaseDoesNotFailItsRenewalBatch(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	lk := newLocker(t, c, Config{TTL: 3 * time.Second})
	var batch []*Lease
	for i := range 9 {
		l, err := lk.Acquire(ctx, string(rune('a'+i)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Release(ctx) })
		batch = append(batch, l)
	}
	near := batch[0]
	lk.sched.mu.Lock()
	near.cancelAt.Store(int64(clock.Now() + 20*time.Millisecond))
	lk.sched.dlQ.fix(near)
	lk.sched.mu.Unlock()
	lk.sched.signal()
	takeRenewals(lk, batch...)

	require.NoError(t, srv.Pause()) // the batch meets a slow Redis
	resume := time.AfterFunc(80*time.Millisecond, func() { _ = srv.Resume() })
	defer resume.Stop()
	lk.renew(batch)

	require.ErrorIs(t, near.Err(), ErrLost, "the near lease reached its cancel point")
	for _, l := range batch[1:] {
		assert.NoError(t, l.Err(), "healthy lease %q lost with its neighbour", l.Key())
	}
}

// A renewal confirmed after the lease's cancel point (the reply was slow,
// the scheduler had not looked yet) must not revive it: Err has reported
// the loss already, and LOST is final.
func TestARenewalAfterTheCancelPointDoesNotReviveTheLease(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{TTL: 3 * time.Second})
	waitIdle(t, lk)
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()

	time.Sleep(100 * time.Millisecond)
	takeRenewals(lk, l)
	sentAt := clock.Now() // a renewal leaves...
	suspend.Emulate(lk.set.cancelAfter() - 50*time.Millisecond)
	require.ErrorIs(t, l.Err(), ErrLost, "past the cancel point") // ...and its reply comes after it
	lk.sched.renewed([]*Lease{l}, sentAt, []obs.RenewalResult{obs.RenewalRenewed}, []error{nil}, nil)

	require.ErrorIs(t, l.Err(), ErrLost, "a late renewal revived a lost lease")
	assert.Zero(t, l.Remaining())
	assert.Equal(t, LossDeadline, lossReason(t, waitDone(t, l, time.Second)))
}

// Durations too large to add to an instant must be refused or saturated,
// never wrap: a wrapped deadline is one in the past (nothing is sent) or
// none at all (a renewal that never times out).
func TestHugeDurationsAreRefusedOrSaturated(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{})

	for _, cfg := range []Config{
		{RenewalTimeout: math.MaxInt64},
		{SafetyMargin: math.MaxInt64},
		{TTL: math.MaxInt64},
		{CommitHard: -1, CommitWarn: math.MaxInt64},
	} {
		_, err := lk.With(cfg)
		require.ErrorIs(t, err, errInvalid)
	}

	huge, err := lk.With(Config{AcquireTimeout: math.MaxInt64, ReleaseTimeout: math.MaxInt64,
		MaxHold: math.MaxInt64, Wait: math.MaxInt64, FenceRetention: math.MaxInt64})
	require.NoError(t, err, "a timeout without a practical bound saturates")
	l, err := huge.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.NoError(t, l.Err())
	lockKey, _ := redisKeys(lk.set.Namespace, "k")
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = huge.Acquire(wctx, "k")
	cancel()
	require.ErrorIs(t, err, ErrNotAcquired, "a huge wait ends with the context")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, l.Release(ctx))
	// The release may grant the key to the queued attempt before its leave
	// lands; the leave then releases it.
	assert.Eventually(t, func() bool { return c.Exists(ctx, lockKey).Val() == 0 }, 5*time.Second, time.Millisecond, "the release was sent")
}

// A report that panics after the lease was taken (a span processor, a
// logger's handler) must not leave a lease that is renewed until Close and
// never released: the panic goes on, the lease ends and its key is freed.
func TestAPanickingAcquireReportLeavesNoLease(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(panicOnEnd{}))
	lk := newLocker(t, c, Config{Telemetry: telemetry.New(telemetry.Config{TracerProvider: tp})})
	func() {
		defer func() { assert.Equal(t, "report", recover()) }()
		_, _ = lk.Acquire(ctx, "k")
		t.Error("the report's panic must reach the caller")
	}()
	other := newLocker(t, c, Config{Namespace: lk.set.Namespace})
	require.Eventually(t, func() bool {
		l, err := other.Acquire(ctx, "k")
		if err != nil {
			return false
		}
		_ = l.Release(ctx)
		return true
	}, 2*time.Second, 10*time.Millisecond, "the key stays held by a lease nobody can release")
}

// panicOnEnd is a span processor that panics when a span ends.
type panicOnEnd struct{}

func (panicOnEnd) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (panicOnEnd) OnEnd(sdktrace.ReadOnlySpan)                     { panic("report") }
func (panicOnEnd) Shutdown(context.Context) error                  { return nil }
func (panicOnEnd) ForceFlush(context.Context) error                { return nil }

// The caller that leads a shared pipeline must stop waiting at its own
// deadline like every other caller, although the pipeline waits longer for
// a neighbour with a longer timeout (a release, here).
func TestTheLeaderOfASharedPipelineKeepsItsAcquireTimeout(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	lk := newLocker(t, c, Config{TTL: 5 * time.Second, ReleaseTimeout: 3 * time.Second})
	held, err := lk.Acquire(ctx, "held")
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	g := lane(lk)
	quick := with(t, lk, Config{AcquireTimeout: 100 * time.Millisecond})
	for _, k := range []string{"x", "y"} { // two pipelines in flight, ending in 100ms
		go func() { _, _ = quick.Acquire(ctx, k) }()
	}
	waitFor(t, func() bool { n, _ := g.Load(); return n == groupcommit.MaxInFlight })
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	bounded := with(t, lk, Config{AcquireTimeout: 250 * time.Millisecond})
	go func() {
		start := time.Now()
		l, err := bounded.Acquire(ctx, "k")
		if err == nil {
			_ = l.Release(ctx)
		}
		done <- result{err, time.Since(start)}
	}()
	waitFor(t, func() bool { _, q := g.Load(); return q == 1 })
	held.ReleaseAsync(ctx) // queued behind the acquire, with a 3s timeout
	waitFor(t, func() bool { _, q := g.Load(); return q == 2 })
	time.AfterFunc(1500*time.Millisecond, func() { _ = srv.Resume() })

	r := <-done
	require.ErrorIs(t, r.err, ErrUnknown)
	assert.Less(t, r.took, time.Second, "the acquire waited %v with a 250ms timeout", r.took)
}

func TestReleaseTimeoutScalesWithTTL(t *testing.T) {
	s, err := Config{TTL: time.Second}.withDefaults().settings()
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, s.ReleaseTimeout)
}

// takeRenewals takes leases off the renewal queue, as the scheduler does
// when it puts them in a batch.
func takeRenewals(lk *Locker, leases ...*Lease) {
	lk.sched.mu.Lock()
	defer lk.sched.mu.Unlock()
	for _, l := range leases {
		lk.sched.renewQ.remove(l)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond)
}

package lease

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/telemetry"
)

func TestInvalidOptions(t *testing.T) {
	cases := []struct {
		name string
		opt  Option
	}{
		{"TTL below minimum", WithTTL(time.Millisecond)},
		{"empty namespace", WithNamespace("")},
		{"namespace with braces", WithNamespace("a{b}")},
		{"namespace with space", WithNamespace("a b")},
		{"namespace too long", WithNamespace(string(make([]byte, 65)))},
		{"empty name", WithName("")},
		{"negative max hold", WithMaxHold(-time.Second)},
		{"negative wait", WithWait(-time.Second)},
		{"zero backoff", WithBackoff(0, time.Second)},
		{"backoff max below min", WithBackoff(time.Second, time.Millisecond)},
		{"negative safety", WithSafetyMargin(-time.Second)},
		{"safety eats the TTL", WithSafetyMargin(9 * time.Second)},
		{"renewal timeout too long", WithRenewalTimeout(8 * time.Second)},
		{"negative renewal timeout", WithRenewalTimeout(-time.Second)},
		{"negative acquire timeout", WithAcquireTimeout(-time.Second)},
		{"zero release timeout", WithReleaseTimeout(-1)},
		{"commit warn below hard", WithCommitMargins(time.Second, time.Millisecond)},
		{"negative commit hard", WithCommitMargins(-time.Second, time.Second)},
		{"fence retention below TTL", WithFenceRetention(time.Second)},
		{"negative replicas", WithReplicationAck(-1, time.Second)},
		{"replication ack without timeout", WithReplicationAck(1, 0)},
	}
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lk.Acquire(context.Background(), "k", tc.opt)
			require.ErrorIs(t, err, errInvalidOption)
			assert.Panics(t, func() { NewLocker(c, tc.opt) }, "NewLocker must refuse it at start-up")
		})
	}
	assert.Panics(t, func() { NewLocker(nil) })
	assert.NotPanics(t, func() { _ = NewLocker(c, nil).Close() }, "nil options are ignored")
}

func TestDefaultsScaleWithTTL(t *testing.T) {
	s, err := withOptions(defaultConfig(), []Option{WithTTL(3 * time.Second)}).settings()
	require.NoError(t, err)
	assert.Equal(t, time.Second, s.renewEvery)
	assert.Equal(t, 300*time.Millisecond, s.safety)
	assert.Equal(t, 600*time.Millisecond, s.renewalTimeout)
	assert.Equal(t, 32*time.Millisecond, s.drift)
	assert.Equal(t, 150*time.Millisecond, s.commitHard)
	assert.Equal(t, 750*time.Millisecond, s.commitWarn)

	d, err := defaultConfig().settings()
	require.NoError(t, err)
	assert.Equal(t, defaultTTL, d.ttl)
	assert.Equal(t, defaultNamespace, d.namespace)
}

func TestCloseLosesHeldLeasesAndRefusesAcquire(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	require.NoError(t, c.Ping(ctx).Err())
	baseline := goleak.IgnoreCurrent()
	_, withO := observe(t) // its reports run too, and end by Close
	lk := NewLocker(c, WithNamespace(testNamespace(t)), withO)
	l, err := lk.Acquire(ctx, "held")
	require.NoError(t, err)

	require.NoError(t, lk.Close())
	goleak.VerifyNone(t, baseline) // nothing of the Locker's outlives Close
	assert.Equal(t, LossClosed, lossReason(t, context.Cause(l.Context())))
	_, err = lk.Acquire(ctx, "other")
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, lk.Close(), "Close is idempotent")
	require.NoError(t, l.Release(ctx), "the key was left to expire and can still be released")
}

// TestOneGoroutinePerLocker: holding many leases adds no goroutines; renewal
// is one scheduler, not one goroutine per lease.
func TestOneGoroutinePerLocker(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, WithTTL(time.Minute))
	warm, err := lk.Acquire(ctx, "warm")
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	before := runtime.NumGoroutine()
	leases := make([]*Lease, 500)
	for i := range leases {
		leases[i], err = lk.Acquire(ctx, string(rune(0x4e00+i)))
		require.NoError(t, err)
	}
	assert.Less(t, runtime.NumGoroutine()-before, 5)
	for _, l := range leases {
		require.NoError(t, l.Release(ctx))
	}
}

// TestPerAcquireOptionsScaleFromTheCallersConfig: a per-acquire TTL derives
// its timings from the TTL, as on NewLocker, not from the Locker's TTL.
func TestPerAcquireOptionsScaleFromTheCallersConfig(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t)) // default TTL 10s
	waitIdle(t, lk)
	short, err := lk.Acquire(ctx, "short", WithTTL(time.Second))
	require.NoError(t, err, "a 1s lease on a 10s Locker is valid")
	assert.Equal(t, 200*time.Millisecond, short.set.renewalTimeout)
	long, err := lk.Acquire(ctx, "long", WithTTL(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 12*time.Second, long.set.renewalTimeout)
	assert.Equal(t, 2*time.Second, lk.set.renewalTimeout, "the Locker's settings are untouched")
	require.NoError(t, short.Release(ctx))
	require.NoError(t, long.Release(ctx))
}

// TestAShortLeaseOnAnIdleLockerIsRenewed: the scheduler of a Locker that
// holds nothing sleeps; a lease with a TTL shorter than the Locker's must
// wake it, or it would be lost.
func TestAShortLeaseOnAnIdleLockerIsRenewed(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t)) // default TTL 10s
	waitIdle(t, lk)
	l, err := lk.Acquire(ctx, "idle", WithTTL(300*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(time.Second)
	require.NoError(t, l.Err(), "renewed every 100ms while the Locker's period is 3.3s")
	require.NoError(t, l.Release(ctx))
}

func TestWithDerivesALockerThatSharesEverythingElse(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t))
	_, err := lk.With(WithName(""))
	require.ErrorIs(t, err, errInvalidOption)

	short, err := lk.With(WithName("reports"), WithTTL(time.Second))
	require.NoError(t, err)
	l, err := short.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "reports", l.set.name)
	assert.Equal(t, 200*time.Millisecond, l.set.renewalTimeout)
	assert.Equal(t, defaultName, lk.set.name, "the Locker's settings are untouched")
	_, err = lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired, "one key space: the same namespace and Redis")
	assert.Same(t, lk.sched, short.sched)

	require.NoError(t, short.Close())
	require.ErrorIs(t, context.Cause(l.Context()), ErrLost, "closing a derived Locker closes them all")
	_, err = lk.Acquire(ctx, "other")
	require.ErrorIs(t, err, ErrClosed)
}

func TestBackoffIsBounded(t *testing.T) {
	set, err := withOptions(defaultConfig(), []Option{WithBackoff(5*time.Second, 10*time.Second)}).settings()
	require.NoError(t, err)
	for attempt := range 100 {
		d := backoff(set, attempt, 0)
		require.Positive(t, d)
		require.LessOrEqual(t, d, 10*time.Second, "attempt %d", attempt)
	}
	assert.LessOrEqual(t, backoff(set, 50, 20*time.Millisecond), 21*time.Millisecond, "capped by the holder's TTL")
}

// TestPastTheCancelPointNothingCommits: the lease's own clock decides, not
// the scheduler: with a zero hard margin, a lease past its cancel point that
// the scheduler has not marked yet still refuses to commit.
func TestPastTheCancelPointNothingCommits(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), WithCommitMargins(0, 0))
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	// As if the scheduler were late: move the cancel point into the past
	// without telling it.
	l.cancelAt.Store(int64(clock.Now() - time.Millisecond))
	require.ErrorIs(t, l.Err(), ErrLost)
	assert.Zero(t, l.Remaining())
	err = l.Commit(ctx, func(context.Context, fence.Token) error { t.Fatal("fn ran past the cancel point"); return nil })
	require.ErrorIs(t, err, ErrLost, "past the cancel point the lease counts as lost")
	_ = l.Release(ctx)
}

// slowLog is a log handler stuck for a second per record, like a blocked
// stderr pipe.
type slowLog struct{}

func (slowLog) Enabled(context.Context, slog.Level) bool  { return true }
func (slowLog) Handle(context.Context, slog.Record) error { time.Sleep(time.Second); return nil }
func (s slowLog) WithAttrs([]slog.Attr) slog.Handler      { return s }
func (s slowLog) WithGroup(string) slog.Handler           { return s }

// TestSlowReportsDoNotDelayCancellation: the loss of one lease is logged by
// a handler that blocks for a second; the next lease's cancel point still
// comes on time.
func TestSlowReportsDoNotDelayCancellation(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	tel := telemetry.New(telemetry.Config{Logger: slog.New(slowLog{})})
	lk := newLocker(t, srv.Client(t), WithTelemetry(tel), WithTTL(time.Second))
	first, err := lk.Acquire(ctx, "first", WithMaxHold(50*time.Millisecond))
	require.NoError(t, err)
	second, err := lk.Acquire(ctx, "second", WithMaxHold(150*time.Millisecond))
	require.NoError(t, err)
	_ = waitDone(t, first, 5*time.Second)
	start := time.Now()
	_ = waitDone(t, second, 5*time.Second)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "the first loss's slow log held up the second cancellation")
	_ = first.Release(ctx)
	_ = second.Release(ctx)
}

// TestReleasePastTheCancelPointIsALoss: a lease released after its cancel
// point, before the scheduler got to it, is reported lost (as Err said), not
// released.
func TestReleasePastTheCancelPointIsALoss(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	o, withO := observe(t)
	lk := newLocker(t, srv.Client(t), withO)
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	l.cancelAt.Store(int64(clock.Now() - time.Millisecond)) // as if the scheduler were late
	require.ErrorIs(t, l.Err(), ErrLost)
	require.NoError(t, l.Release(ctx))
	require.ErrorIs(t, context.Cause(l.Context()), ErrLost)
	losses := o.waitLosses(t, 1)
	assert.Equal(t, string(LossDeadline), losses[0].Attrs[obs.AttrReason])
	var releases int64
	for _, n := range byResult(t, o, obs.LeaseReleases, obs.ReleaseResults) {
		releases += n
	}
	require.EqualValues(t, 1, releases)
	assert.EqualValues(t, 1, o.HistPoint(t, obs.LeaseCancellationLatency, lockAttrs(defaultName)).Count, "released as lost")
}

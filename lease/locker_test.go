package lease

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
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

func TestInvalidConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"TTL below minimum", Config{TTL: time.Millisecond}},
		{"namespace with braces", Config{Namespace: "a{b}"}},
		{"namespace with space", Config{Namespace: "a b"}},
		{"namespace too long", Config{Namespace: string(make([]byte, 65))}},
		{"negative max hold", Config{MaxHold: -time.Second}},
		{"negative wait", Config{Wait: -time.Second}},
		{"negative backoff", Config{BackoffMin: -time.Millisecond, BackoffMax: time.Second}},
		{"backoff max below min", Config{BackoffMin: time.Second, BackoffMax: time.Millisecond}},
		{"safety eats the TTL", Config{SafetyMargin: 9 * time.Second}},
		{"renewal timeout too long", Config{RenewalTimeout: 8 * time.Second}},
		{"negative renewal timeout", Config{RenewalTimeout: -time.Second}},
		{"negative acquire timeout", Config{AcquireTimeout: -time.Second}},
		{"zero release timeout", Config{ReleaseTimeout: -1}},
		{"commit warn below hard", Config{CommitHard: time.Second, CommitWarn: time.Millisecond}},
		{"fence retention below TTL", Config{FenceRetention: time.Second}},
		{"negative replicas", Config{ReplicationAcks: -1, ReplicationTimeout: time.Second}},
		{"replication ack without timeout", Config{ReplicationAcks: 1}},
		{"replica too long", Config{Replica: strings.Repeat("r", 65)}},
		{"replica with space", Config{Replica: "pod a"}},
		{"replica with @", Config{Replica: "pod@a"}},
		{"replica with a bar mark", Config{Replica: "pod~a"}},
		{"replica not printable", Config{Replica: "pod\na"}},
	}
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			derived, err := lk.With(tc.cfg)
			require.ErrorIs(t, err, errInvalid)
			assert.Nil(t, derived)
			assert.Panics(t, func() { NewLocker(c, tc.cfg) }, "NewLocker must refuse it at start-up")
		})
	}
	assert.Panics(t, func() { NewLocker(nil, Config{}) })
	assert.NotPanics(t, func() { _ = NewLocker(c, Config{}).Close() }, "the zero Config takes every default")
}

// TestEmptyAndNegativeFields: an empty name or namespace and a zero
// backoff are the defaults, not errors, and With leaves them to the
// Locker's; a negative safety or commit margin is none.
func TestEmptyAndNegativeFields(t *testing.T) {
	c := redistest.Start(t).Client(t)
	lk := NewLocker(c, Config{Name: "", Namespace: "", BackoffMin: 0})
	t.Cleanup(func() { _ = lk.Close() })
	assert.Equal(t, defaultName, lk.set.Name)
	assert.Equal(t, defaultNamespace, lk.set.Namespace)
	assert.Equal(t, defaultBackoffMin, lk.set.BackoffMin)
	named := with(t, lk, Config{Name: "jobs", Namespace: "jobs"})
	unnamed := with(t, named, Config{Name: "", Namespace: ""})
	assert.Equal(t, "jobs", unnamed.set.Name)
	assert.Equal(t, "jobs", unnamed.set.Namespace)

	none, err := lk.With(Config{SafetyMargin: -time.Second, CommitHard: -time.Second, CommitWarn: -time.Second})
	require.NoError(t, err, "a negative margin is none, not an error")
	assert.Zero(t, none.set.SafetyMargin)
	assert.Zero(t, none.set.CommitHard)
	assert.Zero(t, none.set.CommitWarn)
	assert.Equal(t, none.set.TTL-none.set.drift, none.set.cancelAfter(), "no safety margin: cancelled at the expiry less the drift")
	assert.Equal(t, defaultTTL/10, lk.set.SafetyMargin, "the Locker's are untouched")
	warnOnly := with(t, lk, Config{CommitHard: -1, CommitWarn: time.Second})
	assert.Zero(t, warnOnly.set.CommitHard)
	assert.Equal(t, time.Second, warnOnly.set.CommitWarn)
	hardOnly := with(t, lk, Config{CommitWarn: -1})
	assert.Equal(t, defaultTTL/20, hardOnly.set.CommitHard, "the hard margin keeps its default")
	assert.Zero(t, hardOnly.set.CommitWarn, "no near-expiry band")
	_, err = lk.With(Config{CommitHard: 2 * time.Second, CommitWarn: time.Second})
	require.ErrorIs(t, err, errInvalid, "a warn margin below the hard one")
}

func TestDefaultsScaleWithTTL(t *testing.T) {
	s, err := Config{TTL: 3 * time.Second}.withDefaults().settings()
	require.NoError(t, err)
	assert.Equal(t, time.Second, s.renewEvery)
	assert.Equal(t, 300*time.Millisecond, s.SafetyMargin)
	assert.Equal(t, 600*time.Millisecond, s.RenewalTimeout)
	assert.Equal(t, 32*time.Millisecond, s.drift)
	assert.Equal(t, 150*time.Millisecond, s.CommitHard)
	assert.Equal(t, 750*time.Millisecond, s.CommitWarn)

	d, err := Config{}.withDefaults().settings()
	require.NoError(t, err)
	assert.Equal(t, defaultTTL, d.TTL)
	assert.Equal(t, defaultNamespace, d.Namespace)
}

func TestCloseLosesHeldLeasesAndRefusesAcquire(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	require.NoError(t, c.Ping(ctx).Err())
	baseline := goleak.IgnoreCurrent()
	_, tel := observe(t) // its reports run too, and end by Close
	lk := NewLocker(c, Config{Namespace: testNamespace(t), Telemetry: tel})
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
	lk := newLocker(t, c, Config{TTL: time.Minute})
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

// TestADerivedTTLScalesFromTheCallersConfig: a TTL set through With
// derives its timings from the TTL, as on NewLocker, not from the Locker's
// TTL.
func TestADerivedTTLScalesFromTheCallersConfig(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{}) // default TTL 10s
	waitIdle(t, lk)
	short, err := with(t, lk, Config{TTL: time.Second}).Acquire(ctx, "short")
	require.NoError(t, err, "a 1s lease on a 10s Locker is valid")
	assert.Equal(t, 200*time.Millisecond, short.set.RenewalTimeout)
	long, err := with(t, lk, Config{TTL: time.Minute}).Acquire(ctx, "long")
	require.NoError(t, err)
	assert.Equal(t, 12*time.Second, long.set.RenewalTimeout)
	assert.Equal(t, 2*time.Second, lk.set.RenewalTimeout, "the Locker's settings are untouched")
	require.NoError(t, short.Release(ctx))
	require.NoError(t, long.Release(ctx))
}

// TestAShortLeaseOnAnIdleLockerIsRenewed: the scheduler of a Locker that
// holds nothing sleeps; a lease with a TTL shorter than the Locker's must
// wake it, or it would be lost.
func TestAShortLeaseOnAnIdleLockerIsRenewed(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{}) // default TTL 10s
	waitIdle(t, lk)
	l, err := with(t, lk, Config{TTL: 300 * time.Millisecond}).Acquire(ctx, "idle")
	require.NoError(t, err)
	time.Sleep(time.Second)
	require.NoError(t, l.Err(), "renewed every 100ms while the Locker's period is 3.3s")
	require.NoError(t, l.Release(ctx))
}

func TestWithDerivesALockerThatSharesEverythingElse(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{})
	short, err := lk.With(Config{Name: "reports", TTL: time.Second})
	require.NoError(t, err)
	l, err := short.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "reports", l.set.Name)
	assert.Equal(t, 200*time.Millisecond, l.set.RenewalTimeout)
	assert.Equal(t, defaultName, lk.set.Name, "the Locker's settings are untouched")
	_, err = lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired, "one key space: the same namespace and Redis")
	assert.Same(t, lk.sched, short.sched)

	require.NoError(t, short.Close())
	require.ErrorIs(t, context.Cause(l.Context()), ErrLost, "closing a derived Locker closes them all")
	_, err = lk.Acquire(ctx, "other")
	require.ErrorIs(t, err, ErrClosed)
}

func TestBackoffIsBounded(t *testing.T) {
	set, err := Config{BackoffMin: 5 * time.Second, BackoffMax: 10 * time.Second}.withDefaults().settings()
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
	lk := newLocker(t, srv.Client(t), Config{CommitHard: -1, CommitWarn: -1})
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
	lk := newLocker(t, srv.Client(t), Config{Telemetry: tel, TTL: time.Second})
	first, err := with(t, lk, Config{MaxHold: 50 * time.Millisecond}).Acquire(ctx, "first")
	require.NoError(t, err)
	second, err := with(t, lk, Config{MaxHold: 150 * time.Millisecond}).Acquire(ctx, "second")
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
	o, tel := observe(t)
	lk := newLocker(t, srv.Client(t), Config{Telemetry: tel})
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

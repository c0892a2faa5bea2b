package lease

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockwatch/lockwatch/internal/redistest"
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
			require.ErrorIs(t, err, ErrInvalidOption)
			assert.Panics(t, func() { NewLocker(c, tc.opt) }, "NewLocker must refuse it at start-up")
		})
	}
	assert.Panics(t, func() { NewLocker(nil) })
	assert.NotPanics(t, func() { _ = NewLocker(c, nil).Close() }, "nil options are ignored")
}

func TestDefaultsScaleWithTTL(t *testing.T) {
	s, err := applyOptions(defaultConfig(), []Option{WithTTL(3 * time.Second)})
	require.NoError(t, err)
	assert.Equal(t, time.Second, s.renewEvery)
	assert.Equal(t, 300*time.Millisecond, s.safety)
	assert.Equal(t, 600*time.Millisecond, s.renewalTimeout)
	assert.Equal(t, 32*time.Millisecond, s.drift)
	assert.Equal(t, 150*time.Millisecond, s.commitHard)
	assert.Equal(t, 750*time.Millisecond, s.commitWarn)

	d, err := applyOptions(defaultConfig(), nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultTTL, d.ttl)
	assert.Equal(t, DefaultNamespace, d.namespace)
}

func TestCloseLosesHeldLeasesAndRefusesAcquire(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	require.NoError(t, c.Ping(ctx).Err())
	baseline := goleak.IgnoreCurrent()
	rec := &recorder{}
	lk := NewLocker(c, WithNamespace(testNamespace(t)), rec.withHooks())
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

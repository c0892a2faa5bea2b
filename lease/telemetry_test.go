package lease

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/telemetry"
)

func lockAttrs(name string, kv ...string) map[string]string {
	return telemetrytest.Attrs(append([]string{obs.AttrLockName, name}, kv...)...)
}

func TestTelemetryAcquireContendedRelease(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{Telemetry: h.Tel, Name: "report"})
	rctx, request := h.Tracer.Start(ctx, "request")

	l, err := lk.Acquire(rctx, "tenant-7")
	require.NoError(t, err)
	_, err = lk.Acquire(rctx, "tenant-7")
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseAcquires, lockAttrs("report", obs.AttrResult, "acquired")))
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseAcquires, lockAttrs("report", obs.AttrResult, "contended")))
	n, _ := h.Hist(t, obs.LeaseAcquireDuration, lockAttrs("report", obs.AttrResult, "contended"))
	assert.EqualValues(t, 1, n)
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseActive, lockAttrs("report")))

	require.NoError(t, l.Release(ctx))
	request.End()
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseReleases, lockAttrs("report", obs.AttrResult, "released")))
	n, _ = h.Hist(t, obs.LeaseHoldDuration, lockAttrs("report"))
	assert.EqualValues(t, 1, n)
	assert.EqualValues(t, 0, h.Sum(t, obs.LeaseActive, lockAttrs("report")))

	var acquires []sdktrace.ReadOnlySpan
	for _, s := range h.Spans.Ended() {
		if s.Name() == obs.SpanAcquire {
			acquires = append(acquires, s)
		}
	}
	require.Len(t, acquires, 2)
	lockKey, _ := redisKeys(lk.set.Namespace, "tenant-7")
	for i, s := range acquires {
		assert.Equal(t, request.SpanContext().SpanID(), s.Parent().SpanID(), "lease.acquire is a child of the caller's span")
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		assert.Equal(t, "report", attrs[obs.AttrLockName].AsString())
		assert.Equal(t, hashTag(lockKey), attrs[obs.AttrKeyHash].AsString())
		assert.NotContains(t, attrs, attribute.Key(obs.AttrKey), "the raw key stays off spans by default")
		assert.Equal(t, codes.Unset, s.Status().Code, "acquired and contended are not errors")
		if i == 0 {
			assert.Equal(t, l.Fence(), attrs[obs.AttrFence].AsInt64())
		}
	}
}

func TestTelemetryUnknownAcquire(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	fault := &replyFault{}
	fault.dropAcquireReply.Store(true)
	c.AddHook(fault)
	lk := newLocker(t, c, Config{Telemetry: h.Tel, Name: "report"})
	rctx, request := h.Tracer.Start(ctx, "request")
	defer request.End()

	_, err := lk.Acquire(rctx, "k")
	require.ErrorIs(t, err, ErrUnknown)
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseAcquires, lockAttrs("report", obs.AttrResult, "unknown")))
	h.EventuallySum(t, obs.LeaseUnknownResolutions, lockAttrs("report", obs.AttrResult, "released"), 1)
	spans := h.Spans.Ended()
	require.NotEmpty(t, spans)
	assert.Equal(t, codes.Error, spans[0].Status().Code, "an unknown acquire is a failure on its span")
	level, attrs, ok := h.Logs.Find("acquire failed")
	require.True(t, ok)
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, request.SpanContext().TraceID().String(), attrs["trace_id"])
}

// TestTelemetryLossAndSlowCancellation: a deleted key is a rejected renewal
// and a loss; the work ignores its context for 200ms, which shows as
// overrunning work and as the cancellation latency when it releases.
func TestTelemetryLossAndSlowCancellation(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{Telemetry: h.Tel, Name: "report", TTL: time.Second})
	rctx, request := h.Tracer.Start(ctx, "request")

	l, err := lk.Acquire(rctx, "k")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "k")
	require.NoError(t, c.Del(ctx, lockKey).Err())
	_ = waitDone(t, l, 5*time.Second)
	h.EventuallySum(t, obs.LeaseLosses, lockAttrs("report", obs.AttrReason, "renewal_rejected"), 1)
	h.EventuallySum(t, obs.LeaseRenewals, lockAttrs("report", obs.AttrResult, "rejected"), 1)
	h.EventuallySum(t, obs.LeaseOverrunning, lockAttrs("report"), 1)
	assert.EqualValues(t, 0, h.Sum(t, obs.LeaseActive, lockAttrs("report")))

	time.Sleep(200 * time.Millisecond) // a handler slow to notice its context
	require.ErrorIs(t, l.Release(ctx), ErrNotHeld)
	request.End()
	n, secs := h.Hist(t, obs.LeaseCancellationLatency, lockAttrs("report"))
	assert.EqualValues(t, 1, n)
	assert.GreaterOrEqual(t, secs, 0.2)
	assert.EqualValues(t, 0, h.Sum(t, obs.LeaseOverrunning, lockAttrs("report")))
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseReleases, lockAttrs("report", obs.AttrResult, "not_held")))

	events := map[string]bool{}
	for _, s := range h.Spans.Ended() {
		if s.Name() == "request" {
			for _, e := range s.Events() {
				events[e.Name] = true
			}
		}
	}
	assert.True(t, events[obs.EventRenewalFailed], "renewal failure on the request span")
	assert.True(t, events[obs.EventLost], "loss on the request span")
	level, attrs, ok := h.Logs.Find("lease lost")
	require.True(t, ok)
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, "renewal_rejected", attrs[obs.AttrReason])
	assert.Equal(t, request.SpanContext().TraceID().String(), attrs["trace_id"])
	assert.Equal(t, request.SpanContext().SpanID().String(), attrs["span_id"])
}

func TestTelemetryStall(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	c := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	lk := newLocker(t, c, Config{Telemetry: h.Tel, Name: "report", TTL: time.Second})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	_ = waitDone(t, l, 5*time.Second)
	h.EventuallySum(t, obs.LeaseLosses, lockAttrs("report", obs.AttrReason, "renewal_unknown"), 1)
	h.EventuallySum(t, obs.LeaseRenewals, lockAttrs("report", obs.AttrResult, "unknown"), 1)
	n, _ := h.Hist(t, obs.LeaseRenewalDuration, lockAttrs("report"))
	assert.EqualValues(t, 1, n)
	require.NoError(t, srv.Resume())
	_ = l.Release(ctx)
}

func TestTelemetryCommit(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	ttl := time.Second
	lk := newLocker(t, srv.Client(t), Config{Telemetry: h.Tel, Name: "report", TTL: ttl})
	rctx, request := h.Tracer.Start(ctx, "request")
	l, err := lk.Acquire(rctx, "ok")
	require.NoError(t, err)
	require.NoError(t, l.Commit(rctx, func(context.Context, fence.Token) error { return nil }))
	near, err := with(t, lk, Config{CommitHard: -1, CommitWarn: ttl}).Acquire(rctx, "near")
	require.NoError(t, err)
	require.NoError(t, near.Commit(rctx, func(context.Context, fence.Token) error { return nil }))
	refused, err := with(t, lk, Config{CommitHard: ttl, CommitWarn: ttl}).Acquire(rctx, "refused")
	require.NoError(t, err)
	require.ErrorIs(t, refused.Commit(rctx, func(context.Context, fence.Token) error { return nil }), ErrExpiring)
	request.End()

	for outcome, want := range map[string]int64{"committed": 1, "near_expiry": 1, "refused": 1} {
		assert.Equal(t, want, h.Sum(t, obs.LeaseCommits, lockAttrs("report", obs.AttrResult, outcome)), outcome)
	}
	n, secs := h.Hist(t, obs.LeaseCommitRemaining, lockAttrs("report"))
	assert.EqualValues(t, 3, n)
	assert.Positive(t, secs)
	assert.LessOrEqual(t, secs, 3*ttl.Seconds())
	commits := 0
	for _, s := range h.Spans.Ended() {
		for _, e := range s.Events() {
			if e.Name == obs.EventCommit {
				commits++
			}
		}
	}
	assert.Equal(t, 3, commits)
	for _, l := range []*Lease{l, near, refused} {
		require.NoError(t, l.Release(ctx))
	}
}

// TestTelemetryCardinality: 10,000 distinct keys under one lock name add no
// series, and no key, owner token or fence ever becomes a metric attribute.
func TestTelemetryCardinality(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{Telemetry: h.Tel, Name: "report"})
	cycle := func(key string) int64 {
		l, err := lk.Acquire(ctx, key)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		return l.Fence()
	}
	cycle("warm-up")
	before, _ := h.Series(t)
	fences := map[string]bool{}
	for i := range 10_000 {
		fences[strconv.FormatInt(cycle("customer-"+strconv.Itoa(i)), 10)] = true
	}
	after, kvs := h.Series(t)
	assert.Equal(t, before, after, "distinct keys must not add series")
	allowed := map[string]bool{obs.AttrLockName: true, obs.AttrResult: true, obs.AttrReason: true,
		obs.AttrResource: true}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		require.True(t, allowed[k], "attribute %s is not from the closed set", k)
		require.NotContains(t, v, "customer-", "a key became a metric attribute")
		require.False(t, fences[v], "a fence became a metric attribute")
		require.NotRegexp(t, `^[A-Z2-7]{26}$`, v, "an owner token became a metric attribute")
	}
}

// TestTheZeroTelemetryIsIgnored: a zero Telemetry (not made by New) in
// Config.Telemetry counts as none, as nil does: NewLocker takes the
// default and With keeps the Locker's, instead of panicking at the first
// acquire.
func TestTheZeroTelemetryIsIgnored(t *testing.T) {
	ctx := testCtx(t)
	c := redistest.Start(t).Client(t)
	h := telemetrytest.New(t)
	derived := with(t, newLocker(t, c, Config{Telemetry: h.Tel}), Config{Telemetry: &telemetry.Telemetry{}})
	for _, lk := range []*Locker{newLocker(t, c, Config{Telemetry: &telemetry.Telemetry{}}), derived} {
		l, err := lk.Acquire(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
	assert.Len(t, h.Ended(obs.SpanAcquire), 1, "the derived Locker reports where its Locker does")
}

package lease

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockwatch/lockwatch/internal/redistest"
	"github.com/lockwatch/lockwatch/telemetry"
)

// harness is an SDK meter provider with a manual reader, a tracer provider
// that keeps every span, and a logger that keeps every record.
type harness struct {
	tel    *telemetry.Telemetry
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer trace.Tracer
	logs   *logCapture
}

func newHarness(t *testing.T) *harness {
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), logs: &logCapture{}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()); _ = tp.Shutdown(context.Background()) })
	h.tel = telemetry.New(telemetry.WithMeterProvider(mp), telemetry.WithTracerProvider(tp), telemetry.WithLogger(slog.New(h.logs)))
	h.tracer = tp.Tracer("test")
	return h
}

func (h *harness) collect(t *testing.T) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out
}

func matches(set attribute.Set, want map[string]string) bool {
	if set.Len() != len(want) {
		return false
	}
	for k, v := range want {
		if got, ok := set.Value(attribute.Key(k)); !ok || got.AsString() != v {
			return false
		}
	}
	return true
}

// sum returns the value of a counter or up-down counter series.
func (h *harness) sum(t *testing.T, name string, attrs map[string]string) int64 {
	t.Helper()
	for _, m := range h.collect(t) {
		if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
			for _, dp := range s.DataPoints {
				if matches(dp.Attributes, attrs) {
					return dp.Value
				}
			}
		}
	}
	return 0
}

// hist returns the count and sum of a histogram series.
func (h *harness) hist(t *testing.T, name string, attrs map[string]string) (uint64, float64) {
	t.Helper()
	for _, m := range h.collect(t) {
		if hd, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
			for _, dp := range hd.DataPoints {
				if matches(dp.Attributes, attrs) {
					return dp.Count, dp.Sum
				}
			}
		}
	}
	return 0, 0
}

// eventuallySum waits for a counter to reach want (hooks of background work
// run a moment after the call that caused them returns).
func (h *harness) eventuallySum(t *testing.T, name string, attrs map[string]string, want int64) {
	t.Helper()
	require.Eventually(t, func() bool { return h.sum(t, name, attrs) == want }, 10*time.Second, 5*time.Millisecond,
		"%s%v: want %d, have %d", name, attrs, want, h.sum(t, name, attrs))
}

// attributes returns every metric attribute as key=value, one per series.
func (h *harness) attributes(t *testing.T) (series int, kvs []string) {
	for _, m := range h.collect(t) {
		each := func(set attribute.Set) {
			series++
			for _, kv := range set.ToSlice() {
				kvs = append(kvs, string(kv.Key)+"="+kv.Value.Emit())
			}
		}
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				each(dp.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				each(dp.Attributes)
			}
		}
	}
	return series, kvs
}

// logCapture is a slog.Handler that keeps every record.
type logCapture struct {
	mu      sync.Mutex
	records []slog.Record
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCapture) WithGroup(string) slog.Handler      { return c }

// find returns the attributes of the first record whose message contains msg.
func (c *logCapture) find(msg string) (slog.Level, map[string]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.records {
		if strings.Contains(r.Message, msg) {
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			return r.Level, attrs, true
		}
	}
	return 0, nil, false
}

func lockAttrs(name string, kv ...string) map[string]string {
	m := map[string]string{telemetry.AttrLockName: name}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestTelemetryAcquireContendedRelease(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), WithTelemetry(h.tel), WithName("report"))
	rctx, request := h.tracer.Start(ctx, "request")

	l, err := lk.Acquire(rctx, "tenant-7")
	require.NoError(t, err)
	_, err = lk.Acquire(rctx, "tenant-7")
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseAcquires, lockAttrs("report", telemetry.AttrResult, "acquired")))
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseAcquires, lockAttrs("report", telemetry.AttrResult, "contended")))
	n, _ := h.hist(t, telemetry.LeaseAcquireDuration, lockAttrs("report", telemetry.AttrResult, "contended"))
	assert.EqualValues(t, 1, n)
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseActive, lockAttrs("report")))

	require.NoError(t, l.Release(ctx))
	request.End()
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseReleases, lockAttrs("report", telemetry.AttrResult, "released")))
	n, _ = h.hist(t, telemetry.LeaseHoldDuration, lockAttrs("report"))
	assert.EqualValues(t, 1, n)
	assert.EqualValues(t, 0, h.sum(t, telemetry.LeaseActive, lockAttrs("report")))

	var acquires []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == telemetry.SpanAcquire {
			acquires = append(acquires, s)
		}
	}
	require.Len(t, acquires, 2)
	lockKey, _ := redisKeys(lk.set.namespace, "tenant-7")
	for i, s := range acquires {
		assert.Equal(t, request.SpanContext().SpanID(), s.Parent().SpanID(), "lease.acquire is a child of the caller's span")
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		assert.Equal(t, "report", attrs[telemetry.AttrLockName].AsString())
		assert.Equal(t, hashTag(lockKey), attrs[telemetry.AttrKeyHash].AsString())
		assert.NotContains(t, attrs, attribute.Key(telemetry.AttrKey), "the raw key stays off spans by default")
		assert.Equal(t, codes.Unset, s.Status().Code, "acquired and contended are not errors")
		if i == 0 {
			assert.Equal(t, l.Fence(), attrs[telemetry.AttrFence].AsInt64())
		}
	}
}

func TestTelemetryUnknownAcquire(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	fault := &replyFault{}
	fault.dropAcquireReply.Store(true)
	c.AddHook(fault)
	lk := newLocker(t, c, WithTelemetry(h.tel), WithName("report"))
	rctx, request := h.tracer.Start(ctx, "request")
	defer request.End()

	_, err := lk.Acquire(rctx, "k")
	require.ErrorIs(t, err, ErrUnknown)
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseAcquires, lockAttrs("report", telemetry.AttrResult, "unknown")))
	h.eventuallySum(t, telemetry.LeaseUnknownResolutions, lockAttrs("report", telemetry.AttrResolution, "released"), 1)
	spans := h.spans.Ended()
	require.NotEmpty(t, spans)
	assert.Equal(t, codes.Error, spans[0].Status().Code, "an unknown acquire is a failure on its span")
	level, attrs, ok := h.logs.find("acquire failed")
	require.True(t, ok)
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, request.SpanContext().TraceID().String(), attrs["trace_id"])
}

// TestTelemetryLossAndSlowCancellation: a deleted key is a rejected renewal
// and a loss; the work ignores its context for 200ms, which shows as
// overrunning work and as the cancellation latency when it releases.
func TestTelemetryLossAndSlowCancellation(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, WithTelemetry(h.tel), WithName("report"), WithTTL(300*time.Millisecond))
	rctx, request := h.tracer.Start(ctx, "request")

	l, err := lk.Acquire(rctx, "k")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.namespace, "k")
	require.NoError(t, c.Del(ctx, lockKey).Err())
	waitDone(t, l, 5*time.Second)
	h.eventuallySum(t, telemetry.LeaseLosses, lockAttrs("report", telemetry.AttrReason, "renewal_rejected"), 1)
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseRenewals, lockAttrs("report", telemetry.AttrResult, "rejected")))
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseOverrunning, lockAttrs("report")))
	assert.EqualValues(t, 0, h.sum(t, telemetry.LeaseActive, lockAttrs("report")))

	time.Sleep(200 * time.Millisecond) // a handler slow to notice its context
	require.ErrorIs(t, l.Release(ctx), ErrNotHeld)
	request.End()
	n, secs := h.hist(t, telemetry.LeaseCancellationLatency, lockAttrs("report"))
	assert.EqualValues(t, 1, n)
	assert.GreaterOrEqual(t, secs, 0.2)
	assert.EqualValues(t, 0, h.sum(t, telemetry.LeaseOverrunning, lockAttrs("report")))
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseReleases, lockAttrs("report", telemetry.AttrResult, "not_held")))

	events := map[string]bool{}
	for _, s := range h.spans.Ended() {
		if s.Name() == "request" {
			for _, e := range s.Events() {
				events[e.Name] = true
			}
		}
	}
	assert.True(t, events[telemetry.EventRenewalFailed], "renewal failure on the request span")
	assert.True(t, events[telemetry.EventLost], "loss on the request span")
	level, attrs, ok := h.logs.find("lease lost")
	require.True(t, ok)
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, "renewal_rejected", attrs[telemetry.AttrReason])
	assert.Equal(t, request.SpanContext().TraceID().String(), attrs["trace_id"])
	assert.Equal(t, request.SpanContext().SpanID().String(), attrs["span_id"])
}

func TestTelemetryStall(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	srv := redistest.Start(t)
	c := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	lk := newLocker(t, c, WithTelemetry(h.tel), WithName("report"), WithTTL(time.Second))
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	waitDone(t, l, 5*time.Second)
	h.eventuallySum(t, telemetry.LeaseLosses, lockAttrs("report", telemetry.AttrReason, "renewal_unknown"), 1)
	assert.EqualValues(t, 1, h.sum(t, telemetry.LeaseRenewals, lockAttrs("report", telemetry.AttrResult, "unknown")))
	n, _ := h.hist(t, telemetry.LeaseRenewalDuration, lockAttrs("report"))
	assert.EqualValues(t, 1, n)
	require.NoError(t, srv.Resume())
	_ = l.Release(ctx)
}

func TestTelemetryCommit(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	srv := redistest.Start(t)
	ttl := time.Second
	lk := newLocker(t, srv.Client(t), WithTelemetry(h.tel), WithName("report"), WithTTL(ttl))
	rctx, request := h.tracer.Start(ctx, "request")
	l, err := lk.Acquire(rctx, "ok")
	require.NoError(t, err)
	require.NoError(t, l.Commit(rctx, func(context.Context, int64) error { return nil }))
	near, err := lk.Acquire(rctx, "near", WithCommitMargins(0, ttl))
	require.NoError(t, err)
	require.NoError(t, near.Commit(rctx, func(context.Context, int64) error { return nil }))
	refused, err := lk.Acquire(rctx, "refused", WithCommitMargins(ttl, ttl))
	require.NoError(t, err)
	require.ErrorIs(t, refused.Commit(rctx, func(context.Context, int64) error { return nil }), ErrExpiring)
	request.End()

	for outcome, want := range map[string]int64{"committed": 1, "near_expiry": 1, "refused": 1} {
		assert.EqualValues(t, want, h.sum(t, telemetry.LeaseCommits, lockAttrs("report", telemetry.AttrOutcome, outcome)), outcome)
	}
	n, secs := h.hist(t, telemetry.LeaseCommitRemaining, lockAttrs("report"))
	assert.EqualValues(t, 3, n)
	assert.Positive(t, secs)
	assert.LessOrEqual(t, secs, 3*ttl.Seconds())
	commits := 0
	for _, s := range h.spans.Ended() {
		for _, e := range s.Events() {
			if e.Name == telemetry.EventCommit {
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
	h := newHarness(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), WithTelemetry(h.tel), WithName("report"))
	cycle := func(key string) int64 {
		l, err := lk.Acquire(ctx, key)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		return l.Fence()
	}
	cycle("warm-up")
	before, _ := h.attributes(t)
	fences := map[string]bool{}
	for i := range 10_000 {
		fences[strconv.FormatInt(cycle("customer-"+strconv.Itoa(i)), 10)] = true
	}
	after, kvs := h.attributes(t)
	assert.Equal(t, before, after, "distinct keys must not add series")
	allowed := map[string]bool{telemetry.AttrLockName: true, telemetry.AttrResult: true, telemetry.AttrReason: true,
		telemetry.AttrOutcome: true, telemetry.AttrResolution: true, telemetry.AttrResource: true}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		require.True(t, allowed[k], "attribute %s is not from the closed set", k)
		require.NotContains(t, v, "customer-", "a key became a metric attribute")
		require.False(t, fences[v], "a fence became a metric attribute")
		require.NotRegexp(t, `^[A-Z2-7]{26}$`, v, "an owner token became a metric attribute")
	}
}

// Package telemetrytest records lockwatch's telemetry in memory for tests:
// an SDK meter provider with a manual reader, a tracer provider that keeps
// every span, and a logger that keeps every record, with helpers that read
// one series. Tests assert exact counts through it, never on a mock.
package telemetrytest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockwatch/lockwatch/telemetry"
)

// Harness holds the in-memory providers and the Telemetry built on them.
type Harness struct {
	Tel    *telemetry.Telemetry
	Spans  *tracetest.SpanRecorder
	Tracer trace.Tracer
	Logs   *Logs
	reader *sdkmetric.ManualReader
}

// New returns a harness whose providers shut down when the test ends.
func New(t testing.TB) *Harness { return newHarness(t, false) }

// NewRawKeys returns a harness whose Telemetry puts raw keys on spans
// (telemetry.Config.RawKeys).
func NewRawKeys(t testing.TB) *Harness { return newHarness(t, true) }

func newHarness(t testing.TB, rawKeys bool) *Harness {
	h := &Harness{reader: sdkmetric.NewManualReader(), Spans: tracetest.NewSpanRecorder(), Logs: &Logs{}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.Spans))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()); _ = tp.Shutdown(context.Background()) })
	h.Tel = telemetry.New(telemetry.Config{MeterProvider: mp, TracerProvider: tp, Logger: slog.New(h.Logs), RawKeys: rawKeys})
	h.Tracer = tp.Tracer("test")
	return h
}

// Collect returns every metric recorded so far.
func (h *Harness) Collect(t testing.TB) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out
}

// Attrs builds an attribute map: Attrs("lock.name", "report", "result", "acquired").
func Attrs(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
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

// Sum returns the value of a counter or up-down counter series (0 if none).
func (h *Harness) Sum(t testing.TB, name string, attrs map[string]string) int64 {
	t.Helper()
	for _, m := range h.Collect(t) {
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

// Hist returns the count and sum of a histogram series.
func (h *Harness) Hist(t testing.TB, name string, attrs map[string]string) (uint64, float64) {
	t.Helper()
	for _, m := range h.Collect(t) {
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

// EventuallySum waits for a counter to reach want: what background work
// records lands a moment after the call that caused it returns.
func (h *Harness) EventuallySum(t testing.TB, name string, attrs map[string]string, want int64) {
	t.Helper()
	require.Eventually(t, func() bool { return h.Sum(t, name, attrs) == want }, 10*time.Second, 5*time.Millisecond,
		"%s%v: want %d, have %d", name, attrs, want, h.Sum(t, name, attrs))
}

// Series returns how many series exist and every attribute as key=value.
func (h *Harness) Series(t testing.TB) (series int, kvs []string) {
	for _, m := range h.Collect(t) {
		each := func(set attribute.Set) {
			series++
			for _, kv := range set.ToSlice() {
				kvs = append(kvs, string(kv.Key)+"="+kv.Value.String())
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

// Ended returns the ended spans named name, in the order they ended.
func (h *Harness) Ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range h.Spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Attr returns the attribute key of span (an empty value if it has none).
func Attr(span sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range span.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// SpanEvents returns the attributes of each event named name on span, a
// span of a Harness's Tracer, ended or not.
func SpanEvents(span trace.Span, name string) []map[string]attribute.Value {
	var out []map[string]attribute.Value
	for _, e := range span.(sdktrace.ReadOnlySpan).Events() {
		if e.Name == name {
			attrs := map[string]attribute.Value{}
			for _, kv := range e.Attributes {
				attrs[string(kv.Key)] = kv.Value
			}
			out = append(out, attrs)
		}
	}
	return out
}

// HistPoint returns a histogram series' data point (count, sum, min, max).
func (h *Harness) HistPoint(t testing.TB, name string, attrs map[string]string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	for _, m := range h.Collect(t) {
		if hd, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
			for _, dp := range hd.DataPoints {
				if matches(dp.Attributes, attrs) {
					return dp
				}
			}
		}
	}
	return metricdata.HistogramDataPoint[float64]{}
}

// Events returns the names of the events on every ended span named span.
func (h *Harness) Events(span string) map[string]bool {
	events := map[string]bool{}
	for _, s := range h.Spans.Ended() {
		if s.Name() == span {
			for _, e := range s.Events() {
				events[e.Name] = true
			}
		}
	}
	return events
}

// Logs is a slog.Handler that keeps every record.
type Logs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (c *Logs) Enabled(context.Context, slog.Level) bool { return true }
func (c *Logs) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}
func (c *Logs) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *Logs) WithGroup(string) slog.Handler      { return c }

// Records returns every record kept so far.
func (c *Logs) Records() []slog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]slog.Record(nil), c.records...)
}

// Log is one record as kept: its time carries a monotonic reading.
type Log struct {
	Level slog.Level
	Time  time.Time
	Attrs map[string]string
}

// All returns every record whose message contains msg, in order.
func (c *Logs) All(msg string) []Log {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Log
	for _, r := range c.records {
		if strings.Contains(r.Message, msg) {
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			out = append(out, Log{Level: r.Level, Time: r.Time, Attrs: attrs})
		}
	}
	return out
}

// Wait waits until n records whose message contains msg were kept and
// returns them: what background work logs lands a moment after the call
// that caused it returns.
func (c *Logs) Wait(t testing.TB, msg string, n int) []Log {
	t.Helper()
	var logs []Log
	require.Eventually(t, func() bool { logs = c.All(msg); return len(logs) >= n }, 10*time.Second, 2*time.Millisecond,
		"want %d records %q", n, msg)
	return logs
}

// Find returns the level and attributes of the first record whose message
// contains msg.
func (c *Logs) Find(msg string) (slog.Level, map[string]string, bool) {
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

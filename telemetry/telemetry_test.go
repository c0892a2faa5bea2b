package telemetry_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/telemetry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is the Recorder a Telemetry records through.
func recorder(tel *telemetry.Telemetry) *obs.Recorder { return obs.RecorderOf(tel) }

func sums(t *testing.T, reader *sdkmetric.ManualReader) (map[string]int64, map[string][]string) {
	values, exemplars, err := sumsOf(reader)
	require.NoError(t, err)
	return values, exemplars
}

// sumsOf collects every int64 sum as "name{k=v,...}" → value, with the
// exemplars' trace ids.
func sumsOf(reader *sdkmetric.ManualReader) (map[string]int64, map[string][]string, error) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		return nil, nil, err
	}
	values, exemplars := map[string]int64{}, map[string][]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			s, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range s.DataPoints {
				var kvs []string
				for _, kv := range dp.Attributes.ToSlice() {
					kvs = append(kvs, string(kv.Key)+"="+kv.Value.String())
				}
				id := m.Name + "{" + strings.Join(kvs, ",") + "}"
				values[id] = dp.Value
				for _, e := range dp.Exemplars {
					exemplars[id] = append(exemplars[id], string(e.TraceID))
				}
			}
		}
	}
	return values, exemplars, nil
}

// TestResourceSideSignals: fence checks count by result, rejections count
// with an exemplar of the writer's span and a Warn log, and late completions
// count and mark the span.
func TestResourceSideSignals(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	logs := &telemetrytest.Logs{}
	tel := telemetry.New(telemetry.Config{MeterProvider: mp, TracerProvider: tp, Logger: slog.New(logs)})

	rec := recorder(tel)
	ctx, writer := tp.Tracer("test").Start(context.Background(), "write")
	for _, c := range []obs.FenceCheck{
		{Resource: "ledger", Fence: 10, HighWater: 9, Accepted: true},
		{Resource: "ledger", Fence: 11, HighWater: 10, Accepted: true},
		{Resource: "ledger", Fence: 10, HighWater: 11, Accepted: false},
	} {
		fctx, span := rec.StartFenceCheck(ctx, "ledger")
		rec.EndFenceCheck(fctx, span, c)
	}
	rec.LateCompletion(ctx, "report")
	writer.End()

	values, exemplars := sums(t, reader)
	assert.EqualValues(t, 2, values[obs.FenceChecks+"{resource=ledger,result=accepted}"])
	assert.EqualValues(t, 1, values[obs.FenceChecks+"{resource=ledger,result=rejected}"])
	assert.EqualValues(t, 1, values[obs.FenceRejections+"{resource=ledger}"])
	assert.EqualValues(t, 1, values[obs.LeaseLateCompletions+"{lock.name=report}"])
	trace := writer.SpanContext().TraceID()
	assert.Contains(t, exemplars[obs.FenceRejections+"{resource=ledger}"], string(trace[:]))

	var checks, marked int
	for _, s := range spans.Ended() {
		if s.Name() == obs.SpanFenceCheck {
			checks++
			assert.Equal(t, writer.SpanContext().SpanID(), s.Parent().SpanID())
			assert.Contains(t, s.Attributes(), attribute.String(obs.AttrResource, "ledger"))
		}
		for _, e := range s.Events() {
			if e.Name == obs.EventLateCompletion {
				marked++
			}
		}
	}
	assert.Equal(t, 3, checks)
	assert.Equal(t, 1, marked)

	var warned []string
	for _, r := range logs.Records() {
		assert.Equal(t, slog.LevelWarn, r.Level)
		warned = append(warned, r.Message)
	}
	assert.Len(t, warned, 2, "one rejection and one late completion: %v", warned)
}

// TestNewDefaultsToTheGlobalProviders: with a zero Config, a Telemetry
// reports to the global providers, also to ones set after New (the API
// delegates).
func TestNewDefaultsToTheGlobalProviders(t *testing.T) {
	tel := telemetry.New(telemetry.Config{})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	previous := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	defer otel.SetMeterProvider(previous)

	recorder(tel).LateCompletion(context.Background(), "report")
	values, _ := sums(t, reader)
	assert.EqualValues(t, 1, values[obs.LeaseLateCompletions+"{lock.name=report}"])
}

// TestSeriesStartAtZero: the first use of a lock name or resource creates
// its failure series at zero, so that rate() sees their first event.
func TestSeriesStartAtZero(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	tel := telemetry.New(telemetry.Config{MeterProvider: mp, Logger: slog.New(slog.DiscardHandler)})
	rec := recorder(tel)
	rec.Renewal(context.Background(), obs.Renewal{Lock: "report", Result: obs.RenewalRenewed, Duration: time.Millisecond})
	ctx, span := rec.StartFenceCheck(context.Background(), "ledger")
	rec.EndFenceCheck(ctx, span, obs.FenceCheck{Resource: "ledger", Fence: 2, HighWater: 1, Accepted: true})

	values, _ := sums(t, reader)
	for _, series := range []string{
		obs.FenceRejections + "{resource=ledger}",
		obs.FenceChecks + "{resource=ledger,result=rejected}",
		obs.LeaseLosses + "{lock.name=report,reason=renewal_unknown}",
		obs.LeaseAcquires + "{lock.name=report,result=unknown}",
		obs.LeaseLateCompletions + "{lock.name=report}",
	} {
		v, ok := values[series]
		assert.True(t, ok, "series %s not created", series)
		assert.Zero(t, v, series)
	}
	assert.EqualValues(t, 1, values[obs.FenceChecks+"{resource=ledger,result=accepted}"])
	assert.EqualValues(t, 1, values[obs.LeaseRenewals+"{lock.name=report,result=renewed}"])
}

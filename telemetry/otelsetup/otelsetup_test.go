package otelsetup_test

import (
	"context"
	"go/build"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recordEverySignal records one of each signal through the real exporter,
// inside a sampled span, and returns that span.
func recordEverySignal(t *testing.T) (*otelsetup.Providers, trace.Span) {
	t.Helper()
	ctx := context.Background()
	p, err := otelsetup.New(ctx, otelsetup.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	tel := telemetry.New(telemetry.Config{
		MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider, Logger: slog.New(slog.DiscardHandler),
	})

	ctx, span := p.TracerProvider.Tracer("test").Start(ctx, "request")
	defer span.End()
	rec := obs.RecorderOf(tel)
	actx, aspan := rec.StartAcquire(ctx, "report", obs.Key{Raw: "tenant-7", Hash: "0123456789abcdef0123456789abcdef"})
	rec.WaitStarted(actx, "report")
	rec.WaitEnded(actx, obs.Wait{Lock: "report", Result: obs.WaitAcquired, Waited: time.Millisecond})
	rec.EndAcquire(actx, aspan, obs.Acquire{Lock: "report", Result: obs.AcquireAcquired, Duration: 2 * time.Millisecond,
		Fence: 42, Attempts: 1})
	rec.UnknownResolved(ctx, obs.Resolution{Lock: "report", Result: obs.ResolutionReleased})
	rec.Renewal(ctx, obs.Renewal{Lock: "report", Result: obs.RenewalRenewed, Duration: time.Millisecond})
	rec.Lost(ctx, obs.Loss{Lock: "report", Reason: obs.LossDeadline, Fence: 42})
	rec.Committed(ctx, obs.Commit{Lock: "report", Result: obs.CommitNearExpiry, Remaining: time.Second, Fence: 42})
	rec.Released(ctx, obs.Release{Lock: "report", Result: obs.ReleaseReleased, Held: 3 * time.Second, Lost: true,
		SinceLoss: 10 * time.Millisecond})
	rec.LateCompletion(ctx, "report")
	rec.Campaigning(ctx, obs.Candidate{Election: "jobs", Identity: "pod-1"})
	tctx, tspan := rec.StartTerm(ctx, obs.TermStart{Election: "jobs", Identity: "pod-1", Fence: 42, Leaderless: time.Second})
	rec.EndTerm(tctx, tspan, obs.TermEnd{Election: "jobs", Identity: "pod-1", Fence: 42, Held: time.Minute,
		Change: obs.TermLost, Loss: obs.LossDeadline, Late: true})
	rec.PermitsLimit(ctx, "exports", 4)
	pev := obs.PermitAcquire{Semaphore: "exports", Start: time.Now()}
	rec.PermitWaitStarted(ctx, &pev)
	rec.PermitAcquired(ctx, &pev, obs.AcquireAcquired)
	rec.PermitEnded(ctx, "exports", obs.LossDeadline, nil)
	fctx, fspan := rec.StartFenceCheck(ctx, "ledger")
	rec.EndFenceCheck(fctx, fspan, obs.FenceCheck{Resource: "ledger", Fence: 41, HighWater: 42})
	return p, span
}

// TestExportedNamesMatchTheConstants scrapes the real Prometheus exporter and
// checks every series the dashboards and alerts query: name, type, help and
// labels, and that promlint finds nothing to complain about.
func TestExportedNamesMatchTheConstants(t *testing.T) {
	p, _ := recordEverySignal(t)
	families, err := p.Registry.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	wantType := map[obs.Kind]dto.MetricType{
		obs.Counter:       dto.MetricType_COUNTER,
		obs.Histogram:     dto.MetricType_HISTOGRAM,
		obs.UpDownCounter: dto.MetricType_GAUGE,
	}
	scope := []string{"otel_scope_name", "otel_scope_schema_url", "otel_scope_version"}
	for _, m := range obs.Metrics {
		t.Run(m.Prom, func(t *testing.T) {
			f := byName[m.Prom]
			require.NotNil(t, f, "no series %s; exported: %v", m.Prom, keys(byName))
			assert.Equal(t, wantType[m.Kind], f.GetType())
			assert.Equal(t, m.Description, f.GetHelp())
			require.NotEmpty(t, f.GetMetric())
			for _, metric := range f.GetMetric() {
				var labels []string
				for _, l := range metric.GetLabel() {
					if !slices.Contains(scope, l.GetName()) {
						labels = append(labels, l.GetName())
					}
				}
				assert.ElementsMatch(t, m.Labels, labels)
			}
			if m.Kind == obs.Histogram {
				var bounds []float64
				for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
					bounds = append(bounds, b.GetUpperBound())
				}
				assert.Equal(t, m.Buckets, bounds, "explicit second-scale buckets")
			}
		})
	}
	problems, err := testutil.GatherAndLint(p.Registry)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestExemplarsOnOpenMetricsScrape: a value recorded inside a sampled span
// carries that span's trace id as an exemplar on the OpenMetrics scrape, on
// the latency histograms (the wait's among them) and on the fence-rejection
// counter.
func TestExemplarsOnOpenMetricsScrape(t *testing.T) {
	p, span := recordEverySignal(t)
	body := scrapeOpenMetrics(t, p)
	traceID := span.SpanContext().TraceID().String()
	for _, series := range []string{
		obs.PromLeaseCancellationLatency + "_bucket",
		obs.PromLeaseCommitRemaining + "_bucket",
		obs.PromLeaseHoldDuration + "_bucket",
		obs.PromLeaseWaitDuration + "_bucket",
		obs.PromFenceRejections,
	} {
		found := false
		for line := range strings.SplitSeq(body, "\n") {
			if strings.HasPrefix(line, series) && strings.Contains(line, `trace_id="`+traceID+`"`) {
				found = true
				break
			}
		}
		assert.True(t, found, "no exemplar with trace %s on %s", traceID, series)
	}
}

// TestCounterExemplarIsFromTheLastInterval tries what ExemplarView is for:
// with a reservoir of GOMAXPROCS slots (4 here, whatever the machine) and
// the exporter showing the last slot, four rejections before a scrape and
// one after it left the scrape on the fourth rejection's trace.
func TestCounterExemplarIsFromTheLastInterval(t *testing.T) {
	runtime.GOMAXPROCS(4)
	defer runtime.SetDefaultGOMAXPROCS()
	p, err := otelsetup.New(context.Background(), otelsetup.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	assert.Contains(t, checkFreshExemplars(t, p), `resource="ledger"`)
}

// TestExemplarViewAfterTheServicesOwnViews follows the package doc's advice
// for a MeterProvider of the service's own: its view of the rejection
// counter comes first, with the reservoir of one, and ExemplarView after.
// The rejection counter keeps the service's view (no resource label) and
// a fresh exemplar; the loss counter, which only ExemplarView matches,
// gets a fresh one too.
func TestExemplarViewAfterTheServicesOwnViews(t *testing.T) {
	runtime.GOMAXPROCS(4)
	defer runtime.SetDefaultGOMAXPROCS()
	registry := prometheus.NewRegistry()
	exporter, err := promexporter.New(promexporter.WithRegisterer(registry))
	require.NoError(t, err)
	own := sdkmetric.NewView(sdkmetric.Instrument{Name: obs.FenceRejections}, sdkmetric.Stream{
		AttributeFilter: func(attribute.KeyValue) bool { return false },
		ExemplarReservoirProviderSelector: func(sdkmetric.Aggregation) exemplar.ReservoirProvider {
			return exemplar.FixedSizeReservoirProvider(1)
		},
	})
	p := &otelsetup.Providers{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithView(own), sdkmetric.WithView(otelsetup.ExemplarView())),
		TracerProvider: sdktrace.NewTracerProvider(),
		Registry:       registry,
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	assert.NotContains(t, checkFreshExemplars(t, p), "resource=", "the service's own view was not applied")
}

// checkFreshExemplars records fence rejections and lease losses, each pair
// in a span of its own, in rounds of 4, 3, 2 and 1 between scrapes: each
// scrape must show, on both counters, the trace of an event recorded since
// the scrape before it. It returns the rejection series' labels, as last
// scraped.
func checkFreshExemplars(t *testing.T, p *otelsetup.Providers) string {
	t.Helper()
	tel := obs.RecorderOf(telemetry.New(telemetry.Config{
		MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider, Logger: slog.New(slog.DiscardHandler),
	}))
	event := func() string {
		ctx, span := p.TracerProvider.Tracer("test").Start(context.Background(), "write")
		defer span.End()
		fctx, fspan := tel.StartFenceCheck(ctx, "ledger")
		tel.EndFenceCheck(fctx, fspan, obs.FenceCheck{Resource: "ledger", Fence: 41, HighWater: 42})
		tel.Lost(ctx, obs.Loss{Lock: "report", Reason: obs.LossDeadline, Fence: 42})
		return span.SpanContext().TraceID().String()
	}
	var labels string
	// exemplar is the trace id on the series of family whose line holds
	// mark.
	exemplar := func(body, family, mark string) string {
		for l := range strings.SplitSeq(body, "\n") {
			if strings.HasPrefix(l, family+"{") && strings.Contains(l, mark) {
				if family == obs.PromFenceRejections {
					labels, _, _ = strings.Cut(l, "} ")
				}
				_, ex, ok := strings.Cut(l, `trace_id="`)
				require.True(t, ok, "no exemplar on %q", l)
				return ex[:32]
			}
		}
		t.Fatalf("no %s series with %s", family, mark)
		return ""
	}
	for round := range 4 {
		var traces []string
		for range 4 - round {
			traces = append(traces, event())
		}
		body := scrapeOpenMetrics(t, p)
		assert.Contains(t, traces, exemplar(body, obs.PromFenceRejections, ""),
			"round %d: the rejection exemplar is not one of the rejections since the last scrape", round)
		assert.Contains(t, traces, exemplar(body, obs.PromLeaseLosses, obs.AttrReason+`="deadline"`),
			"round %d: the loss exemplar is not one of the losses since the last scrape", round)
	}
	return labels
}

// scrapeOpenMetrics is one scrape of the providers' handler in the
// OpenMetrics format, the one that carries exemplars.
func scrapeOpenMetrics(t *testing.T, p *otelsetup.Providers) string {
	t.Helper()
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/openmetrics-text")
	return string(body)
}

func keys(m map[string]*dto.MetricFamily) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestOTLPTracesWhenTheEndpointIsSet: with OTEL_EXPORTER_OTLP_ENDPOINT set,
// spans are exported over OTLP/HTTP (here to a loopback collector stand-in
// that only counts requests).
func TestOTLPTracesWhenTheEndpointIsSet(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)

	ctx := context.Background()
	p, err := otelsetup.New(ctx, otelsetup.Config{})
	require.NoError(t, err)
	_, span := p.TracerProvider.Tracer("test").Start(ctx, "request")
	span.End()
	require.NoError(t, p.Shutdown(ctx)) // flushes the batch
	assert.Positive(t, posts.Load(), "no OTLP export reached the collector")
}

// TestCorePackagesUseTheAPIOnly: the packages every user links (telemetry,
// lease) import the OpenTelemetry API, never the SDK.
func TestCorePackagesUseTheAPIOnly(t *testing.T) {
	for _, dir := range []string{"..", "../../lease"} {
		pkg, err := build.ImportDir(dir, 0)
		require.NoError(t, err)
		for _, imp := range pkg.Imports {
			assert.NotContains(t, imp, "go.opentelemetry.io/otel/sdk", "%s imports %s", pkg.ImportPath, imp)
			assert.NotContains(t, imp, "go.opentelemetry.io/otel/exporters", "%s imports %s", pkg.ImportPath, imp)
		}
	}
}

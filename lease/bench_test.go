package lease

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/telemetry"
)

// BenchmarkAcquireRelease measures one acquire + release cycle on a private
// loopback redis-server, alone and from 16 goroutines on distinct keys, with
// telemetry off (no-op providers) and on (SDK meter provider, always-sample
// tracer with a discarding exporter, inside a sampled span so exemplars are
// taken), and a PING round trip as the floor, all in one run.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client(b)
	ctx := context.Background()

	b.Run("ping", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	discard := slog.New(slog.DiscardHandler)
	off := telemetry.New(telemetry.Config{MeterProvider: metricnoop.NewMeterProvider(),
		TracerProvider: tracenoop.NewTracerProvider(), Logger: discard})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	on := telemetry.New(telemetry.Config{MeterProvider: mp, TracerProvider: tp, Logger: discard})
	sampled, span := tp.Tracer("bench").Start(ctx, "request")
	defer span.End()

	for _, tc := range []struct {
		name string
		tel  *telemetry.Telemetry
		ctx  context.Context
	}{{"telemetry-off", off, ctx}, {"telemetry-on", on, sampled}} {
		lk := newLocker(b, c, Config{Telemetry: tc.tel})
		cycle := func(b *testing.B, key string) {
			l, err := lk.Acquire(tc.ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(tc.ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("single/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cycle(b, "bench")
			}
		})
		b.Run("parallel16/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var worker atomic.Int64
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines
			b.RunParallel(func(pb *testing.PB) {
				key := "bench-" + strconv.FormatInt(worker.Add(1), 10)
				for pb.Next() {
					cycle(b, key)
				}
			})
		})
	}
}

package bench

import (
	"cmp"
	"context"
	"crypto/sha1"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// parallel16 makes b.RunParallel run 16 goroutines whatever GOMAXPROCS is
// (8 per core on this 2-core machine).
func parallel16(b *testing.B) { b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) }

// roundTrips counts the requests a go-redis client sends: one per command
// and one per pipeline, whatever it holds. Divided by the cycles of a
// benchmark it shows whether concurrent acquires share round trips.
// renewals counts the renewal commands among them.
type roundTrips struct{ n, renewals atomic.Int64 }

// renewSHA is the SHA-1 of lease's renewal script as the client sends it
// (EVALSHA): record.lua's functions, then renew.lua (lease/scripts.go).
// How a benchmark tells renewals from the other commands.
var renewSHA = func() string {
	h := sha1.New()
	for _, f := range []string{"../lease/scripts/record.lua", "../lease/scripts/renew.lua"} {
		src, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		h.Write(src)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}()

// isRenewal reports whether cmd is a lease renewal.
func isRenewal(cmd redis.Cmder) bool {
	args := cmd.Args()
	return cmd.Name() == "evalsha" && len(args) > 1 && args[1] == renewSHA
}

// countRenewals adds the renewals among cmds to n.
func countRenewals(n *atomic.Int64, cmds ...redis.Cmder) {
	for _, c := range cmds {
		if isRenewal(c) {
			n.Add(1)
		}
	}
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		countRenewals(&r.renewals, cmd)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		countRenewals(&r.renewals, cmds...)
		return next(ctx, cmds)
	}
}

// counted returns a client of the shared server with a round-trip counter,
// closed when b ends.
func counted(b *testing.B, addr string) (*redis.Client, *roundTrips) {
	b.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	rt := &roundTrips{}
	c.AddHook(rt)
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return c, rt
}

// measure runs body, which must loop b.N times in total, and reports per
// op the round trips it caused and the CPU time it cost: this process's
// (cpu-µs/op: user + sys, the client and the benchmark's own loop) and the
// shared redis-server's (redis-µs/op, from INFO cpu). On this 2-core
// machine client and server share the cores, so under load what an op
// costs in CPU bounds the ops per second more than its latency does.
func measure(b *testing.B, rt *roundTrips, body func()) { measureBy(b, &rt.n, "rtt/op", body) }

// measureBy is measure with the requests counted by sent, reported per op
// in unit.
func measureBy(b *testing.B, sent *atomic.Int64, unit string, body func()) {
	b.Helper()
	b.ReportAllocs()
	b.StopTimer() // the server's CPU is read outside the timed ops
	info := sharedInfo(b)
	r0, err := redisCPU(context.Background(), info)
	if err != nil {
		b.Fatal(err)
	}
	before := sent.Load()
	c0 := selfCPU()
	b.StartTimer()
	body()
	b.StopTimer()
	c1 := selfCPU()
	r1, err := redisCPU(context.Background(), info)
	if err != nil {
		b.Fatal(err)
	}
	if b.N > 0 {
		n := float64(b.N)
		b.ReportMetric(float64(sent.Load()-before)/n, unit)
		b.ReportMetric(float64((c1-c0).Nanoseconds())/1e3/n, "cpu-µs/op")
		b.ReportMetric(float64((r1-r0).Nanoseconds())/1e3/n, "redis-µs/op")
	}
}

// sharedInfo returns how to send a command to the shared redis-server on a
// connection of its own, outside the client under test (its round trips
// and hooks are not counted).
func sharedInfo(b *testing.B) func(context.Context, ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: sharedAddr, PoolSize: 1})
	b.Cleanup(func() { _ = c.Close() })
	return func(ctx context.Context, args ...any) (any, error) { return c.Do(ctx, args...).Result() }
}

var discardLogs = slog.New(slog.DiscardHandler)

// telemetryOff records nothing: no-op meter and tracer providers.
func telemetryOff() *telemetry.Telemetry {
	return telemetry.New(telemetry.Config{MeterProvider: metricnoop.NewMeterProvider(),
		TracerProvider: tracenoop.NewTracerProvider(), Logger: discardLogs})
}

// telemetryOn records everything a production setup would: an SDK meter
// provider (a manual reader nobody collects from) and an always-sample
// tracer whose batches go to a discarding exporter. It returns a context
// inside a sampled span, as a request handled under otelhttp would be, so
// that exemplars are taken too.
func telemetryOn(b *testing.B) (*telemetry.Telemetry, context.Context) {
	ctx := context.Background()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	sampled, span := tp.Tracer("bench").Start(ctx, "request")
	b.Cleanup(func() {
		span.End()
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
	})
	return telemetry.New(telemetry.Config{MeterProvider: mp, TracerProvider: tp, Logger: discardLogs}), sampled
}

// latencies gathers per-op durations from many goroutines: each keeps its
// own slice and adds it once, when it is done.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// quantile returns the q-quantile (0..1) of d, nearest rank; d is sorted in
// place.
func quantile[T cmp.Ordered](d []T, q float64) T {
	if len(d) == 0 {
		var zero T
		return zero
	}
	slices.Sort(d)
	i := int(q*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// reportQuantiles reports the quantiles qs of d in units of unit, each as
// <prefix>p50-<unitName> (the quantile 1 as <prefix>max-<unitName>).
func reportQuantiles(b *testing.B, d []time.Duration, prefix string, unit time.Duration, unitName string, qs ...float64) {
	for _, q := range qs {
		name := "max"
		if q < 1 {
			name = "p" + strconv.Itoa(int(math.Round(q*100)))
		}
		b.ReportMetric(float64(quantile(d, q))/float64(unit), prefix+name+"-"+unitName)
	}
}

// loopbackOnly fails b for any address outside 127.0.0.1: every server a
// benchmark talks to is one it started on this machine.
func loopbackOnly(b *testing.B, addr string) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		b.Fatalf("benchmarks only talk to 127.0.0.1, not %q", addr)
	}
}

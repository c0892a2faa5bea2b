package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// lateResource is a resource behind a Guard on a real Redis, and a ledger
// the handlers write to without a fence of their own.
type lateResource struct {
	h     *telemetrytest.Harness
	redis redis.UniversalClient
	store *fence.RedisStore
	guard *Guard
	book  *ledger
}

func newLateResource(t *testing.T) *lateResource {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	store := fence.NewRedisStore(srv.Client(t), "ledger", fence.RedisConfig{Namespace: "late", Telemetry: h.Tel})
	return &lateResource{h: h, redis: srv.Client(t), store: store, book: &ledger{values: map[string]string{}},
		guard: NewGuard(store, GuardConfig{Telemetry: h.Tel, Resource: "ledger"})}
}

// set writes the ledger's entry 7, as a handler without a fence would.
func (l *lateResource) set(tok fence.Token) error {
	l.book.mu.Lock()
	l.book.values["7"] = fmt.Sprint("written by ", tok.Fence)
	l.book.mu.Unlock()
	return nil
}

func (l *lateResource) mark(t *testing.T) int64 {
	_, mark, err := l.store.Read(context.Background(), "7")
	require.NoError(t, err)
	return mark
}

func (l *lateResource) late(t *testing.T) int64 {
	return l.h.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, "ledger", obs.AttrResult, string(obs.FenceLate)))
}

// TestGuardTimeoutHandlerInside is issue 24's defect 7 as it was seen:
// http.TimeoutHandler inside the guard. A (token 41) is admitted, times
// out (503) and keeps running; the guard's hold ends with the 503, so B
// (42) is admitted and writes; then A writes. Through Guarded, A's late
// write is refused and counted, and the resource keeps 42's value under
// the mark 42. A resource that fences each write itself refuses it as
// stale.
func TestGuardTimeoutHandlerInside(t *testing.T) {
	for _, via := range []string{"Guarded", "fenced store"} {
		t.Run(via, func(t *testing.T) {
			l := newLateResource(t)
			rows := fence.NewRedisStore(l.redis, "rows", fence.RedisConfig{Namespace: "late", Telemetry: l.h.Tel})
			write := func(ctx context.Context, tok fence.Token) error {
				if via == "Guarded" {
					return Guarded(ctx, func() error { return l.set(tok) })
				}
				// The timeout cancelled A's context: the write must not die
				// of it before the store can judge it.
				return rows.Write(context.WithoutCancel(ctx), "7", tok, []byte(fmt.Sprint("written by ", tok.Fence)))
			}
			value := func() string {
				if via == "Guarded" {
					return l.book.get("7")
				}
				v, _, err := rows.Read(context.Background(), "7")
				require.NoError(t, err)
				return string(v)
			}
			aRunning, aWrote := make(chan struct{}), make(chan error, 1)
			wakeA := make(chan struct{})
			wake := sync.OnceFunc(func() { close(wakeA) })
			t.Cleanup(wake)
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tok, _ := fence.FromContext(r.Context())
				if tok == mint("7", 41) {
					close(aRunning)
					<-wakeA // A is slow: its timeout answers 503 meanwhile
				}
				err := write(r.Context(), tok)
				if tok == mint("7", 41) {
					aWrote <- err
				}
				w.WriteHeader(http.StatusNoContent)
			})
			mux := http.NewServeMux()
			mux.Handle("PUT /ledger/{id}", l.guard.HTTP(pathKey)(timeoutFor41(handler)))
			url, client := serveHTTP(t, mux)

			assert.Equal(t, http.StatusServiceUnavailable, put(t, client, url, 41), "A times out")
			<-aRunning
			assert.Equal(t, http.StatusNoContent, put(t, client, url, 42), "B is admitted and writes")
			wake()
			err := <-aWrote
			assert.EqualValues(t, 42, l.mark(t))
			assert.Equal(t, "written by 42", value(), "the resource holds an older token's value under a newer mark")
			if via == "Guarded" {
				require.ErrorIs(t, err, ErrNotAdmitted)
				assert.EqualValues(t, 1, l.late(t), "the refused late write is counted")
			} else {
				assert.ErrorIs(t, err, fence.ErrStale)
			}
		})
	}
}

// TestGuardTimeoutHandlerOutside: the safe arrangement. With
// http.TimeoutHandler outside the guard, the guard runs in the goroutine
// the timeout handler starts, so A (41) keeps its key after its 503 until
// its handler returns: B (42) is admitted after A's write, and its value
// stands. No write needs Guarded.
func TestGuardTimeoutHandlerOutside(t *testing.T) {
	l := newLateResource(t)
	aRunning, wakeA := make(chan struct{}), make(chan struct{})
	wake := sync.OnceFunc(func() { close(wakeA) })
	t.Cleanup(wake)
	var bRan atomic.Bool
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := fence.FromContext(r.Context())
		if tok == mint("7", 41) {
			close(aRunning)
			<-wakeA
		} else {
			bRan.Store(true)
		}
		_ = l.set(tok)
		w.WriteHeader(http.StatusNoContent)
	})
	mux := http.NewServeMux()
	mux.Handle("PUT /ledger/{id}", timeoutFor41(l.guard.HTTP(pathKey)(handler)))
	url, client := serveHTTP(t, mux)

	assert.Equal(t, http.StatusServiceUnavailable, put(t, client, url, 41), "A times out")
	<-aRunning
	bDone := make(chan int, 1)
	go func() { bDone <- put(t, client, url, 42) }()
	assert.Never(t, bRan.Load, 200*time.Millisecond, 5*time.Millisecond, "B ran while A's handler, admitted first, still ran")
	assert.EqualValues(t, 41, l.mark(t), "B was admitted while A's handler still ran")
	wake()
	assert.Equal(t, http.StatusNoContent, <-bDone)
	assert.EqualValues(t, 42, l.mark(t))
	assert.Equal(t, "written by 42", l.book.get("7"))
	assert.Zero(t, l.late(t))
}

// TestGuardedWriteHandedToAGoroutine: a handler hands its write to a
// goroutine and returns. A Guarded write still running when the handler
// returns holds the key: B (42) waits for it. One that starts after the
// handler returned is refused and counted, and the admitted context has
// ended with ErrNotAdmitted as its cause.
func TestGuardedWriteHandedToAGoroutine(t *testing.T) {
	l := newLateResource(t)
	inWrite, finishWrite := make(chan struct{}), make(chan struct{})
	finish := sync.OnceFunc(func() { close(finishWrite) })
	t.Cleanup(finish)
	late := make(chan error, 1)
	var bRan atomic.Bool
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		tok, _ := fence.FromContext(ctx)
		if tok != mint("7", 41) {
			bRan.Store(true)
			_ = Guarded(ctx, func() error { return l.set(tok) })
			w.WriteHeader(http.StatusNoContent)
			return
		}
		go func() {
			_ = Guarded(ctx, func() error {
				close(inWrite)
				<-finishWrite
				return l.set(tok)
			})
		}()
		go func() {
			<-ctx.Done() // the admission's end
			assert.ErrorIs(t, context.Cause(ctx), ErrNotAdmitted)
			late <- Guarded(ctx, func() error { return l.set(tok) })
		}()
		<-inWrite
		w.WriteHeader(http.StatusAccepted)
	})
	mux := http.NewServeMux()
	mux.Handle("PUT /ledger/{id}", l.guard.HTTP(pathKey)(handler))
	url, client := serveHTTP(t, mux)

	bDone := make(chan int, 1)
	go func() {
		assert.Equal(t, http.StatusAccepted, put(t, client, url, 41))
		bDone <- put(t, client, url, 42)
	}()
	<-inWrite
	assert.Never(t, bRan.Load, 200*time.Millisecond, 5*time.Millisecond, "B ran while A's Guarded write was still running")
	finish()
	assert.Equal(t, http.StatusNoContent, <-bDone)
	require.ErrorIs(t, <-late, ErrNotAdmitted)
	assert.Equal(t, "written by 42", l.book.get("7"))
	assert.EqualValues(t, 1, l.late(t), "the refused late write is counted")
	level, attrs, logged := l.h.Logs.Find("write refused")
	assert.True(t, logged, "the refused late write is logged")
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, "ledger", attrs[obs.AttrResource])

	require.ErrorIs(t, Guarded(context.Background(), func() error { return l.set(mint("7", 99)) }), ErrNotAdmitted, "no Guard admitted it")
	assert.Equal(t, "written by 42", l.book.get("7"))
	assert.EqualValues(t, 1, l.late(t), "a write no Guard admitted is not counted")
}

// TestGuardedGRPC: the same admission on a unary gRPC call: a write from
// a goroutine after the handler returned is refused and counted.
func TestGuardedGRPC(t *testing.T) {
	l := newLateResource(t)
	late := make(chan error, 1)
	client := serveGRPC(t, &health{check: func(ctx context.Context) error {
		tok, _ := fence.FromContext(ctx)
		go func() {
			<-ctx.Done()
			late <- Guarded(ctx, func() error { return l.set(tok) })
		}()
		return Guarded(ctx, func() error { return l.set(tok) })
	}}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		l.guard.UnaryServerInterceptor(func(context.Context, string, any) string { return "7" }))})
	ctx := metadata.AppendToOutgoingContext(testCtx(t), tokenMetadata, wire("7", 41))
	_, err := client.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	require.NoError(t, err)
	require.ErrorIs(t, <-late, ErrNotAdmitted)
	assert.Equal(t, "written by 41", l.book.get("7"))
	assert.EqualValues(t, 1, l.late(t))
}

// TestGuardTelemetryDefault: with a zero GuardConfig (no Telemetry, no
// Resource), a refused late write is counted on the global providers under
// the resource "guard".
func TestGuardTelemetryDefault(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	previous := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	defer otel.SetMeterProvider(previous)

	l := newLateResource(t)
	guard := NewGuard(l.store, GuardConfig{})
	var admitted context.Context
	guard.HTTP(pathKey)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { admitted = r.Context() })).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/ledger/", nil))
	require.ErrorIs(t, Guarded(admitted, func() error { return l.set(mint("7", 1)) }), ErrNotAdmitted)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var late int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == obs.FenceChecks {
				for _, dp := range sum.DataPoints {
					if r, _ := dp.Attributes.Value(obs.AttrResult); r.AsString() == string(obs.FenceLate) {
						res, _ := dp.Attributes.Value(obs.AttrResource)
						assert.Equal(t, "guard", res.AsString())
						late += dp.Value
					}
				}
			}
		}
	}
	assert.EqualValues(t, 1, late)
}

// TestHolderTimeoutHandler: the holder middleware has the same shape. With
// http.TimeoutHandler inside HTTP, the lease ends at the 503 while the
// handler runs on: its Commit is refused (lease.ErrReleased) and counted
// refused, and another replica may take the key. With the timeout handler
// outside, the lease lasts until the handler returns: the other replica is
// refused, and the handler's Commit runs after its 503.
func TestHolderTimeoutHandler(t *testing.T) {
	srv := redistest.Start(t)
	for _, arrangement := range []string{"inside", "outside"} {
		t.Run(arrangement, func(t *testing.T) {
			h := telemetrytest.New(t)
			lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{TTL: 5 * time.Second})
			other := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
			running, wakeA, committed := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			wake := sync.OnceFunc(func() { close(wakeA) })
			t.Cleanup(wake)
			work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(running)
				<-wakeA
				committed <- lease.FromContext(r.Context()).Commit(context.WithoutCancel(r.Context()),
					func(context.Context, fence.Token) error { return nil })
			})
			timeout := func(next http.Handler) http.Handler {
				return http.TimeoutHandler(next, 50*time.Millisecond, "timed out")
			}
			var route http.Handler
			if arrangement == "inside" {
				route = HTTP(lk, pathKey, Config{SyncRelease: true})(timeout(work))
			} else {
				route = timeout(HTTP(lk, pathKey, Config{SyncRelease: true})(work))
			}
			mux := http.NewServeMux()
			mux.Handle("POST /reports/{id}", route)
			url, client := serveHTTP(t, mux)

			assert.Equal(t, http.StatusServiceUnavailable, post(t, client, url+"/reports/7").StatusCode)
			<-running
			l, err := other.Acquire(testCtx(t), "7")
			if arrangement == "inside" {
				require.NoError(t, err, "the lease ended at the 503")
				defer func() { _ = l.Release(context.Background()) }()
			} else {
				require.ErrorIs(t, err, lease.ErrNotAcquired, "the lease lasts until the handler returns")
			}
			wake()
			err = <-committed
			commits := func(result obs.CommitResult) int64 {
				return h.Sum(t, obs.LeaseCommits, telemetrytest.Attrs(obs.AttrLockName, "POST /reports/{id}", obs.AttrResult, string(result)))
			}
			if arrangement == "inside" {
				require.ErrorIs(t, err, lease.ErrReleased)
				assert.EqualValues(t, 1, commits(obs.CommitRefused))
			} else {
				require.NoError(t, err)
				assert.EqualValues(t, 1, commits(obs.CommitCommitted))
			}
		})
	}
}

// timeoutFor41 is http.TimeoutHandler around next, with a short timeout for
// the request of token 41 and a long one for the others, so that only A
// times out however loaded the machine is.
func timeoutFor41(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := 30 * time.Second
		if r.Header.Get(tokenHeader) == wire("7", 41) {
			d = 50 * time.Millisecond
		}
		http.TimeoutHandler(next, d, "timed out").ServeHTTP(w, r)
	})
}

// put sends PUT /ledger/7 with the token of fence n for key 7 and returns
// the status.
func put(t *testing.T, client *http.Client, url string, n int64) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url+"/ledger/7", nil)
	if !assert.NoError(t, err) { //nolint:testifylint // put runs on goroutines too: require cannot stop the test from there
		return -1
	}
	req.Header.Set(tokenHeader, wire("7", n))
	resp, err := client.Do(req)
	if !assert.NoError(t, err) { //nolint:testifylint // put runs on goroutines too: require cannot stop the test from there
		return -1
	}
	resp.Body.Close()
	return resp.StatusCode
}

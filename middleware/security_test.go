package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// Security checks of the middleware: a secret in a request's lock key stays
// out of spans and logs, and a Redis the Locker cannot authenticate to or
// talk to fails closed.

// canary is a secret a client puts in its lock key (a path segment, a
// metadata value), e.g. an account or tenant id.
const canary = "lwcanary9f2c4e7a1b"

const canaryRoute = "POST /tenants/{id}/report"

// passwordServer returns a redis-server that requires password. It is set
// after the start because the helpers' readiness check does not
// authenticate.
func passwordServer(t *testing.T, password string) *redistest.Server {
	t.Helper()
	srv := redistest.Start(t)
	_, err := srv.Do(testCtx(t), "CONFIG", "SET", "requirepass", password)
	require.NoError(t, err)
	return srv
}

// tracedHTTP runs each request inside a span of h's tracer, as a tracing
// middleware in front of lockwatch would, so that span events have a
// recording span to land on.
func tracedHTTP(h *telemetrytest.Harness, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := h.Tracer.Start(r.Context(), "request")
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// tracedUnary is tracedHTTP for unary gRPC calls.
func tracedUnary(h *telemetrytest.Harness) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, span := h.Tracer.Start(ctx, "rpc")
		defer span.End()
		return handler(ctx, req)
	}
}

// sightings returns every place where secret shows in h's spans (names,
// attributes, status, events and their attributes, links) and log records
// (messages and attributes, errors rendered).
func sightings(h *telemetrytest.Harness, secret string) []string {
	var found []string
	for _, s := range h.Spans.Started() {
		if strings.Contains(s.Name(), secret) || strings.Contains(s.Status().Description, secret) {
			found = append(found, fmt.Sprintf("span %q: name or status", s.Name()))
		}
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), secret) {
				found = append(found, fmt.Sprintf("span %q attribute %s", s.Name(), kv.Key))
			}
		}
		for _, e := range s.Events() {
			if strings.Contains(e.Name, secret) {
				found = append(found, fmt.Sprintf("span %q event name %q", s.Name(), e.Name))
			}
			for _, kv := range e.Attributes {
				if strings.Contains(kv.Value.String(), secret) {
					found = append(found, fmt.Sprintf("span %q event %q attribute %s", s.Name(), e.Name, kv.Key))
				}
			}
		}
		for _, l := range s.Links() {
			for _, kv := range l.Attributes {
				if strings.Contains(kv.Value.String(), secret) {
					found = append(found, fmt.Sprintf("span %q link attribute %s", s.Name(), kv.Key))
				}
			}
		}
	}
	for _, r := range h.Logs.Records() {
		if strings.Contains(r.Message, secret) {
			found = append(found, fmt.Sprintf("log %q: message", r.Message))
		}
		r.Attrs(func(a slog.Attr) bool {
			if strings.Contains(a.Value.Resolve().String(), secret) {
				found = append(found, fmt.Sprintf("log %q attribute %s", r.Message, a.Key))
			}
			return true
		})
	}
	return found
}

// canaryScenario drives one kind of request through the HTTP middleware (key:
// the path, which carries the canary) and the gRPC interceptor (key: the
// lock-key metadata, which carries it too).
type canaryScenario struct {
	name string
	// redis returns the client the Locker uses and, for the scenarios that
	// need it, the server to disturb.
	redis func(t *testing.T) (redis.UniversalClient, *redistest.Server)
	// before runs with the Locker before the request, and returns what to
	// undo after it.
	before func(t *testing.T, lk *lease.Locker, key string) func()
	// during runs once the handler holds its lease; the handler then waits
	// for its lease's context to end.
	during     func(t *testing.T, srv *redistest.Server)
	httpStatus int
	grpcCode   codes.Code
	ran        bool // whether the handler runs
	// The signals the scenario must produce, so that the search has
	// something to search: log messages, and events on the request spans.
	logs, events []string
}

// TestSecurityCanaryKeyStaysOutOfSpansAndLogs: with a canary secret in the
// lock key (an HTTP path, a gRPC metadata value), no span attribute, span
// event attribute or log line contains it, whether the lease is held and
// committed, contended, lost (renewal rejected, late completion) or cannot
// be acquired because Redis refuses the connection. With
// telemetry.Config.RawKeys the canary is found, on the lease.acquire span: the
// search would see a leak.
func TestSecurityCanaryKeyStaysOutOfSpansAndLogs(t *testing.T) {
	own := func(t *testing.T) (redis.UniversalClient, *redistest.Server) {
		srv := redistest.Start(t)
		return srv.Client(t), srv
	}
	scenarios := []canaryScenario{
		{
			name: "held and committed", redis: own, httpStatus: http.StatusOK, grpcCode: codes.OK, ran: true,
			events: []string{obs.EventCommit},
		},
		{
			name:  "contended",
			redis: own,
			before: func(t *testing.T, lk *lease.Locker, key string) func() {
				l, err := lk.Acquire(testCtx(t), key)
				require.NoError(t, err)
				return func() { _ = l.Release(context.Background()) }
			},
			httpStatus: http.StatusConflict, grpcCode: codes.Aborted,
		},
		{
			name:  "lost, then a late completion",
			redis: own,
			during: func(t *testing.T, srv *redistest.Server) {
				_, err := srv.Do(testCtx(t), "FLUSHALL")
				require.NoError(t, err)
			},
			httpStatus: http.StatusOK, grpcCode: codes.OK, ran: true,
			logs:   []string{"renewal failed", "lease lost", "completed after its lease was lost"},
			events: []string{obs.EventRenewalFailed, obs.EventLost, obs.EventLateCompletion},
		},
		{
			name: "redis refuses the connection",
			redis: func(t *testing.T) (redis.UniversalClient, *redistest.Server) {
				srv := passwordServer(t, "right")
				return srv.Client(t, func(o *redis.Options) { o.Password = "wrong" }), srv
			},
			httpStatus: http.StatusServiceUnavailable, grpcCode: codes.Unavailable,
			logs: []string{"acquire failed"},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, raw := range []bool{false, true} {
				t.Run(map[bool]string{false: "hashed", true: "raw keys"}[raw], func(t *testing.T) {
					harness := telemetrytest.New
					if raw {
						harness = telemetrytest.NewRawKeys
					}
					h := harness(t)
					runCanaryScenario(t, h, sc)
					for _, msg := range sc.logs {
						_, _, ok := h.Logs.Find(msg)
						assert.True(t, ok, "no log %q", msg)
					}
					for _, span := range []string{"request", "rpc"} {
						events := h.Events(span)
						for _, e := range sc.events {
							assert.True(t, events[e], "no event %s on the %s span", e, span)
						}
					}
					found := sightings(h, canary)
					if raw {
						assert.Contains(t, found, fmt.Sprintf("span %q attribute %s", obs.SpanAcquire, obs.AttrKey),
							"with RawKeys the key is on the acquire span")
					} else {
						assert.Empty(t, found, "the canary leaked without RawKeys")
					}
				})
			}
		})
	}
}

func runCanaryScenario(t *testing.T, h *telemetrytest.Harness, sc canaryScenario) {
	ctx := testCtx(t)
	c, srv := sc.redis(t)
	// A lease's context ends before its loss is reported; the handler waits
	// for the reports (their Warn logs come last, after the span events) so
	// that the span events land on its span.
	logged := func(msg string) (n int) {
		for _, r := range h.Logs.Records() {
			if strings.Contains(r.Message, msg) {
				n++
			}
		}
		return n
	}
	lk := newLocker(t, c, h.Tel, lease.Config{TTL: 300 * time.Millisecond})
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	// work is both handlers' body: commit, or wait for the loss.
	work := func(ctx context.Context) error {
		runs.Add(1)
		l := lease.FromContext(ctx)
		if l == nil {
			return fmt.Errorf("no lease in the handler's context")
		}
		if sc.during == nil {
			return l.Commit(ctx, func(context.Context, fence.Token) error { return nil })
		}
		renewalFailed, lost := logged("renewal failed"), logged("lease lost")
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			return fmt.Errorf("the lease was never lost")
		}
		deadline := time.Now().Add(10 * time.Second)
		for logged("renewal failed") == renewalFailed || logged("lease lost") == lost {
			if time.Now().After(deadline) {
				return fmt.Errorf("the loss was never reported")
			}
			time.Sleep(time.Millisecond)
		}
		return nil // answers success after the loss: a late completion
	}
	call := func(t *testing.T, key string, request func()) {
		t.Helper()
		if sc.before != nil {
			defer sc.before(t, lk, key)()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			request()
		}()
		if sc.during != nil {
			select {
			case <-started:
				sc.during(t, srv)
			case <-done:
			}
		}
		<-done
	}

	t.Run("http", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle(canaryRoute, HTTP(lk, func(r *http.Request) string { return r.URL.Path }, Config{})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := work(r.Context()); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				_, _ = w.Write([]byte("done"))
			})))
		url, client := serveHTTP(t, tracedHTTP(h, mux))
		path := "/tenants/" + canary + "/report"
		var resp *http.Response
		call(t, path, func() {
			var err error
			resp, err = client.Post(url+path, "text/plain", nil)
			assert.NoError(t, err)
		})
		require.NotNil(t, resp)
		defer resp.Body.Close()
		assert.Equal(t, sc.httpStatus, resp.StatusCode)
	})

	t.Run("grpc", func(t *testing.T) {
		svc := &health{check: work}
		client := serveGRPC(t, svc, []grpc.ServerOption{grpc.ChainUnaryInterceptor(tracedUnary(h), UnaryServerInterceptor(lk, unaryKey, Config{}))})
		key := "tenant-" + canary
		var err error
		call(t, key, func() {
			_, err = client.Check(withLockKey(ctx, key), &grpc_health_v1.HealthCheckRequest{})
		})
		assert.Equal(t, sc.grpcCode, status.Code(err), "%v", err)
	})

	want := int32(0)
	if sc.ran {
		want = 2
	}
	assert.Equal(t, want, runs.Load(), "handler runs")
	// Everything is recorded by the time the Locker has closed.
	require.NoError(t, lk.Close())
}

// TestSecurityFailClosed: when the Locker cannot authenticate to Redis (no
// or a wrong password) or cannot speak to it (a TLS client against a
// plaintext server, a plaintext client against a TLS server), Acquire
// returns an error, the HTTP middleware answers 503, the gRPC interceptor
// UNAVAILABLE, the handler never runs and nothing is written to Redis. Each
// refusal comes within the acquire timeout (plus scheduling slack), also
// when the server never completes the TLS handshake: a plaintext Redis
// waits for the end of a line that a TLS ClientHello does not send. The
// controls, with the right password and with TLS on both sides, run the
// handler: the failures come from the mismatch, not from the set-up.
func TestSecurityFailClosed(t *testing.T) {
	const password = "s3cret-Pa55"
	secured := passwordServer(t, password)
	plain := redistest.Start(t)
	withTLS := redistest.StartTLS(t)
	// One dial attempt per command and no command retries: the go-redis
	// pool never reaches the dial-error count at which it starts its
	// background redialer. DialTimeout stays at its default (5s), far above
	// the acquire timeout, which must bound every refusal.
	fast := func(o *redis.Options) { o.MaxRetries, o.DialerRetries = -1, 1 }
	const ttl, acquireTimeout = 2 * time.Second, 400 * time.Millisecond
	within := func(t *testing.T, what string, took time.Duration) {
		t.Helper()
		assert.Less(t, took, acquireTimeout+time.Second,
			"%s refused only after %v, past the acquire timeout %v", what, took, acquireTimeout)
	}
	authed := func(o *redis.Options) { o.Password = password }
	overTLS := func(o *redis.Options) { o.TLSConfig = withTLS.TLSConfig() }
	plainTo := func(addr string) func(*redis.Options) { return func(o *redis.Options) { o.Addr = addr } }

	cases := []struct {
		name   string
		client func(t *testing.T) *redis.Client
		// size counts the keys on the server the client was meant for.
		size    func(t *testing.T) int64
		control bool
	}{
		{
			name:   "no password",
			client: func(t *testing.T) *redis.Client { return secured.Client(t, fast) },
			size:   func(t *testing.T) int64 { return secured.Client(t, authed).DBSize(testCtx(t)).Val() },
		},
		{
			name: "wrong password",
			client: func(t *testing.T) *redis.Client {
				return secured.Client(t, fast, func(o *redis.Options) { o.Password = "wrong" })
			},
			size: func(t *testing.T) int64 { return secured.Client(t, authed).DBSize(testCtx(t)).Val() },
		},
		{
			name:    "control: right password",
			client:  func(t *testing.T) *redis.Client { return secured.Client(t, fast, authed) },
			size:    func(t *testing.T) int64 { return secured.Client(t, authed).DBSize(testCtx(t)).Val() },
			control: true,
		},
		{
			name:   "TLS client, plaintext server",
			client: func(t *testing.T) *redis.Client { return plain.Client(t, fast, overTLS) },
			size:   func(t *testing.T) int64 { return plain.Client(t).DBSize(testCtx(t)).Val() },
		},
		{
			name:   "plaintext client, TLS server",
			client: func(t *testing.T) *redis.Client { return withTLS.Client(t, fast, plainTo(withTLS.TLSAddr())) },
			size:   func(t *testing.T) int64 { return withTLS.Client(t).DBSize(testCtx(t)).Val() },
		},
		{
			name:    "control: TLS on both sides",
			client:  func(t *testing.T) *redis.Client { return withTLS.TLSClient(t, fast) },
			size:    func(t *testing.T) int64 { return withTLS.Client(t).DBSize(testCtx(t)).Val() },
			control: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			h := telemetrytest.New(t)
			lk := newLocker(t, tc.client(t), h.Tel, lease.Config{TTL: ttl, AcquireTimeout: acquireTimeout, ReleaseTimeout: acquireTimeout})
			var runs atomic.Int32

			start := time.Now()
			l, err := lk.Acquire(ctx, "direct")
			if tc.control {
				require.NoError(t, err)
				require.NoError(t, l.Release(ctx))
			} else {
				require.Error(t, err, "Acquire must fail")
				within(t, "Acquire", time.Since(start))
				assert.Nil(t, l)
				require.NotErrorIs(t, err, lease.ErrNotAcquired, "a refused connection is no contention")
			}

			mux := http.NewServeMux()
			mux.Handle("POST /reports/{id}", HTTP(lk, pathKey, Config{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				runs.Add(1)
			})))
			url, hc := serveHTTP(t, mux)
			start = time.Now()
			resp := post(t, hc, url+"/reports/42")
			if tc.control {
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			} else {
				within(t, "the HTTP request", time.Since(start))
				assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
				assert.Contains(t, []string{reasonUnknown, reasonUnavailable}, decodeProblem(t, resp).Reason)
			}

			gc := serveGRPC(t, &health{check: func(context.Context) error { runs.Add(1); return nil }},
				[]grpc.ServerOption{grpc.ChainUnaryInterceptor(UnaryServerInterceptor(lk, unaryKey, Config{}))})
			start = time.Now()
			_, err = gc.Check(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
			if tc.control {
				require.NoError(t, err)
				assert.EqualValues(t, 2, runs.Load(), "the handlers run")
				assert.Positive(t, tc.size(t), "the leases' fence records are in Redis")
				return
			}
			within(t, "the gRPC call", time.Since(start))
			code, info, _ := details(t, err)
			assert.Equal(t, codes.Unavailable, code)
			assert.Contains(t, []string{reasonUnknown, reasonUnavailable}, info.GetReason())
			assert.Zero(t, runs.Load(), "a handler ran without its lease")
			require.NoError(t, lk.Close()) // waits for the clean-up of unknown acquires
			assert.Zero(t, tc.size(t), "nothing was written to Redis")
		})
	}
}

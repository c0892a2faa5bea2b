package middleware

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// stuckKey is a guarded resource whose handler for token 41 blocks until
// the test lets it go, and the test's view of it.
type stuckKey struct {
	store   *fence.RedisStore
	guard   *Guard
	started chan struct{} // A's handler is running
	freed   chan struct{} // closed by release
	release func()        // lets A's handler return; idempotent
	ran     chan string   // tokens of the other handlers that ran
}

func newStuckKey(t *testing.T, cfg GuardConfig) *stuckKey {
	srv := redistest.Start(t)
	freed := make(chan struct{})
	s := &stuckKey{
		store:   fence.NewRedisStore(srv.Client(t), "ledger", fence.RedisConfig{Namespace: "stuck", Telemetry: telemetrytest.New(t).Tel}),
		started: make(chan struct{}),
		freed:   freed,
		release: sync.OnceFunc(func() { close(freed) }),
		ran:     make(chan string, 10),
	}
	s.guard = NewGuard(s.store, cfg)
	return s
}

// handle is the resource's work for one token.
func (s *stuckKey) handle(tok fence.Token) {
	if tok == mint("7", 41) {
		close(s.started)
		<-s.freed
		return
	}
	s.ran <- tok.String()
}

// waiters reports how many requests hold or wait for key's lock.
func (s *stuckKey) waiters(key string) int {
	s.guard.locks.mu.Lock()
	defer s.guard.locks.mu.Unlock()
	if l := s.guard.locks.locks[key]; l != nil {
		return l.users
	}
	return 0
}

func (s *stuckKey) mark(t *testing.T) int64 {
	_, mark, err := s.store.Read(context.Background(), "7")
	require.NoError(t, err)
	return mark
}

// TestGuardWaitEndsWithTheRequest: A (token 41) is stuck in its handler.
// B (42) waits for the key; its client gives up. B must be answered at
// once, not when A ends, must not be admitted (the mark stays 41), and
// must leave nothing behind in the lock table.
func TestGuardWaitEndsWithTheRequest(t *testing.T) {
	t.Run("HTTP", func(t *testing.T) {
		s := newStuckKey(t, GuardConfig{})
		answered := make(chan int, 2)
		mux := http.NewServeMux()
		mux.Handle("PUT /ledger/{id}", s.guard.HTTP(pathKey)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, _ := fence.FromContext(r.Context())
			s.handle(tok)
			w.WriteHeader(http.StatusNoContent)
		})))
		url, client := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusRecorder{ResponseWriter: w}
			mux.ServeHTTP(rec, r)
			answered <- rec.status
		}))
		t.Cleanup(s.release) // before the server's shutdown waits for A
		put := func(ctx context.Context, token string) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPut, url+"/ledger/7", nil)
			req.Header.Set(tokenHeader, token)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		go put(context.Background(), wire("7", 41))
		<-s.started
		bCtx, cancelB := context.WithCancel(context.Background())
		defer cancelB()
		go put(bCtx, wire("7", 42))
		require.Eventually(t, func() bool { return s.waiters("7") == 2 }, 5*time.Second, time.Millisecond, "B never waited for the key")
		cancelB()
		select {
		case code := <-answered:
			assert.Equal(t, http.StatusServiceUnavailable, code)
		case <-time.After(5 * time.Second):
			require.FailNow(t, "B, whose client left, still waits for A")
		}
		assert.EqualValues(t, 41, s.mark(t), "B advanced the mark")
		s.release()
		assert.Equal(t, http.StatusNoContent, <-answered)
		assert.Empty(t, s.ran, "B's handler ran")
		assert.Zero(t, s.waiters("7"), "the key's lock outlived its requests")
	})

	t.Run("gRPC", func(t *testing.T) {
		s := newStuckKey(t, GuardConfig{})
		answered := make(chan error, 2)
		observe := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			resp, err := next(ctx, req)
			answered <- err
			return resp, err
		}
		client := serveGRPC(t, &health{check: func(ctx context.Context) error {
			tok, _ := fence.FromContext(ctx)
			s.handle(tok)
			return nil
		}}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(observe,
			s.guard.UnaryServerInterceptor(func(context.Context, string, any) string { return "7" }))})
		t.Cleanup(s.release)
		check := func(ctx context.Context, token string) {
			ctx = metadata.AppendToOutgoingContext(ctx, tokenMetadata, token)
			_, _ = client.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
		}
		go check(context.Background(), wire("7", 41))
		<-s.started
		bCtx, cancelB := context.WithCancel(context.Background())
		defer cancelB()
		go check(bCtx, wire("7", 42))
		require.Eventually(t, func() bool { return s.waiters("7") == 2 }, 5*time.Second, time.Millisecond, "B never waited for the key")
		cancelB()
		select {
		case err := <-answered:
			assert.Equal(t, codes.Canceled, status.Code(err), "the context's own status")
		case <-time.After(5 * time.Second):
			require.FailNow(t, "B, whose client left, still waits for A")
		}
		assert.EqualValues(t, 41, s.mark(t), "B advanced the mark")
		s.release()
		require.NoError(t, <-answered)
		assert.Empty(t, s.ran, "B's handler ran")
		assert.Zero(t, s.waiters("7"), "the key's lock outlived its requests")
	})
}

// TestGuardWaitBound: with GuardConfig.Wait, B gives up after the bound even
// though its client stays (an HTTP/1.x request with a body, whose leaving
// net/http would not notice), is told to retry, and is not admitted.
func TestGuardWaitBound(t *testing.T) {
	s := newStuckKey(t, GuardConfig{Wait: 100 * time.Millisecond})
	mux := http.NewServeMux()
	mux.Handle("PUT /ledger/{id}", s.guard.HTTP(pathKey)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := fence.FromContext(r.Context())
		s.handle(tok)
		w.WriteHeader(http.StatusNoContent)
	})))
	url, client := serveHTTP(t, mux)
	grpcClient := serveGRPC(t, &health{check: func(ctx context.Context) error {
		tok, _ := fence.FromContext(ctx)
		s.handle(tok)
		return nil
	}}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		s.guard.UnaryServerInterceptor(func(context.Context, string, any) string { return "7" }))})
	t.Cleanup(s.release)
	put := func(token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPut, url+"/ledger/7", strings.NewReader("value"))
		req.Header.Set(tokenHeader, token)
		resp, err := client.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	aDone := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPut, url+"/ledger/7", nil)
		req.Header.Set(tokenHeader, wire("7", 41))
		resp, err := client.Do(req)
		if err != nil {
			aDone <- -1
			return
		}
		resp.Body.Close()
		aDone <- resp.StatusCode
	}()
	<-s.started

	resp := put(wire("7", 42))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, reasonFenceBusy, decodeProblem(t, resp).Reason)

	ctx := metadata.AppendToOutgoingContext(testCtx(t), tokenMetadata, wire("7", 43))
	_, err := grpcClient.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	code, info, retry := details(t, err)
	assert.Equal(t, codes.Unavailable, code)
	assert.Equal(t, reasonFenceBusy, info.GetReason())
	assert.NotNil(t, retry)

	assert.EqualValues(t, 41, s.mark(t), "a request that gave up advanced the mark")
	s.release()
	assert.Equal(t, http.StatusNoContent, <-aDone)
	assert.Empty(t, s.ran)
	assert.Zero(t, s.waiters("7"))
}

// TestGuardWaitNegative: a negative GuardConfig.Wait is a programming error,
// refused at NewGuard like the package's other invalid arguments, not read
// as "no bound"; zero is the documented "no bound but the context".
func TestGuardWaitNegative(t *testing.T) {
	store := fence.NewRedisStore(redistest.Start(t).Client(t), "ledger", fence.RedisConfig{Telemetry: telemetrytest.New(t).Tel})
	assert.PanicsWithValue(t, "middleware: NewGuard: negative Wait: -1s", func() {
		NewGuard(store, GuardConfig{Wait: -time.Second})
	})
	assert.NotPanics(t, func() { NewGuard(store, GuardConfig{Wait: 0}) })
}

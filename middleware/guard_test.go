package middleware

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
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
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// TestHTTPGuardAnswers: a guard in front of a resource, on a real server.
func TestHTTPGuardAnswers(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	store := fence.NewRedisStore(srv.Client(t), "ledger", fence.RedisConfig{Namespace: t.Name(), Telemetry: h.Tel})
	tokens := make(chan fence.Token, 10)
	mux := http.NewServeMux()
	mux.Handle("PUT /ledger/{id}", NewGuard(store, GuardConfig{Telemetry: h.Tel, Resource: "ledger"}).HTTP(pathKey)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := fence.FromContext(r.Context())
		tokens <- tok
		w.WriteHeader(http.StatusNoContent)
	})))
	url, client := serveHTTP(t, mux)
	put := func(values ...string) *http.Response {
		req, err := http.NewRequest(http.MethodPut, url+"/ledger/7", nil)
		require.NoError(t, err)
		for _, v := range values {
			req.Header.Add(tokenHeader, v)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	for _, tc := range []struct {
		name   string
		values []string
		status int
		reason string
	}{
		{"first token", []string{wire("7", 41)}, http.StatusNoContent, ""},
		{"same lease again", []string{wire("7", 41)}, http.StatusNoContent, ""},
		{"newer lease", []string{wire("7", 42)}, http.StatusNoContent, ""},
		{"stale", []string{wire("7", 41)}, http.StatusConflict, reasonFenceStale},
		{"malformed", []string{"+43"}, http.StatusBadRequest, reasonFenceMalformed},
		{"zero", []string{"0"}, http.StatusBadRequest, reasonFenceMalformed},
		{"two values", []string{wire("7", 43), wire("7", 44)}, http.StatusBadRequest, reasonFenceMalformed},
		{"plain number", []string{"43"}, http.StatusBadRequest, reasonFenceUnscoped},
		{"missing", nil, http.StatusPreconditionRequired, reasonFenceMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := put(tc.values...)
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, decodeProblem(t, resp).Reason)
			} else {
				assert.Equal(t, tc.values[0], (<-tokens).String(), "the admitted token is on the handler's context")
			}
		})
	}
	attrs := func(result string) map[string]string {
		return telemetrytest.Attrs(obs.AttrResource, "ledger", obs.AttrResult, result)
	}
	assert.EqualValues(t, 3, h.Sum(t, obs.FenceChecks, attrs("accepted")))
	assert.EqualValues(t, 1, h.Sum(t, obs.FenceChecks, attrs("rejected")))
	assert.EqualValues(t, 3, h.Sum(t, obs.FenceChecks, attrs("malformed")))
	assert.EqualValues(t, 1, h.Sum(t, obs.FenceChecks, attrs("unscoped")))
	assert.EqualValues(t, 1, h.Sum(t, obs.FenceRejections, telemetrytest.Attrs(obs.AttrResource, "ledger")))
	_, mark, err := store.Read(context.Background(), "7")
	require.NoError(t, err)
	assert.EqualValues(t, 42, mark, "no refusal moved the mark")

	t.Run("missing allowed", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("PUT /ledger/{id}", NewGuard(store, GuardConfig{AllowMissingFence: true}).HTTP(pathKey)(http.HandlerFunc(
			func(w http.ResponseWriter, r *http.Request) {
				_, ok := fence.FromContext(r.Context())
				assert.False(t, ok, "no token was checked")
				w.WriteHeader(http.StatusNoContent)
			})))
		url, client := serveHTTP(t, mux)
		req, _ := http.NewRequest(http.MethodPut, url+"/ledger/7", nil)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	})
}

// TestGRPCGuardAnswers: the same table for gRPC, unary and stream.
func TestGRPCGuardAnswers(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	store := fence.NewRedisStore(srv.Client(t), "ledger", fence.RedisConfig{Namespace: t.Name(), Telemetry: h.Tel})
	key := func(context.Context, string, any) string { return "7" }
	skey := func(context.Context, string) string { return "7" }
	svc := &health{
		check: func(context.Context) error { return nil },
		watch: func(stream grpc_health_v1.Health_WatchServer) error {
			return stream.Send(&grpc_health_v1.HealthCheckResponse{})
		},
	}
	guard := NewGuard(store, GuardConfig{Telemetry: h.Tel, Resource: "ledger"})
	client := serveGRPC(t, svc, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(guard.UnaryServerInterceptor(key)),
		grpc.ChainStreamInterceptor(guard.StreamServerInterceptor(skey)),
	})
	call := func(values ...string) error {
		ctx := context.Background()
		for _, v := range values {
			ctx = metadata.AppendToOutgoingContext(ctx, tokenMetadata, v)
		}
		_, err := client.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
		return err
	}
	require.NoError(t, call(wire("7", 41)))
	require.NoError(t, call(wire("7", 42)))
	for _, tc := range []struct {
		name   string
		values []string
		code   codes.Code
		reason string
	}{
		{"stale", []string{wire("7", 41)}, codes.Aborted, reasonFenceStale},
		{"malformed", []string{"4 2"}, codes.InvalidArgument, reasonFenceMalformed},
		{"two values", []string{wire("7", 43), wire("7", 44)}, codes.InvalidArgument, reasonFenceMalformed},
		{"plain number", []string{"43"}, codes.InvalidArgument, reasonFenceUnscoped},
		{"missing", nil, codes.FailedPrecondition, reasonFenceMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, info, _ := details(t, call(tc.values...))
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.reason, info.GetReason())
		})
	}
	t.Run("stream", func(t *testing.T) {
		stream, err := client.Watch(metadata.AppendToOutgoingContext(context.Background(), tokenMetadata, wire("7", 41)), &grpc_health_v1.HealthCheckRequest{})
		require.NoError(t, err)
		_, err = stream.Recv()
		code, info, _ := details(t, err)
		assert.Equal(t, codes.Aborted, code)
		assert.Equal(t, reasonFenceStale, info.GetReason())
	})
	assert.EqualValues(t, 2, h.Sum(t, obs.FenceRejections, telemetrytest.Attrs(obs.AttrResource, "ledger")))
	assert.EqualValues(t, 2, h.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, "ledger", obs.AttrResult, "malformed")))
	assert.EqualValues(t, 1, h.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, "ledger", obs.AttrResult, "unscoped")))
}

// TestGuardSerializesEveryEntryPoint: A is admitted with token 41 on PUT
// while its body is still arriving; B comes with 42 through another entry
// point of the same resource: the same route, a second route, a gRPC
// method. B's handler must not run before A's is done (otherwise A's slow
// write would land after B's and win), so the ledger ends with B's value.
func TestGuardSerializesEveryEntryPoint(t *testing.T) {
	for _, via := range []string{"same route", "second route", "gRPC method"} {
		t.Run(via, func(t *testing.T) {
			srv := redistest.Start(t)
			store := fence.NewRedisStore(srv.Client(t), "ledger", fence.RedisConfig{Namespace: "serialize", Telemetry: telemetrytest.New(t).Tel})
			book := &ledger{values: map[string]string{}}
			var bStarted atomic.Bool
			arrived := make(chan struct{}, 2)
			write := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(tokenHeader) == wire("7", 42) {
					bStarted.Store(true)
				}
				book.ServeHTTP(w, r)
			})
			guard := NewGuard(store, GuardConfig{})
			mux := http.NewServeMux()
			mux.Handle("PUT /ledger/{id}", guard.HTTP(pathKey)(write))
			mux.Handle("POST /ledger/{id}", guard.HTTP(pathKey)(write))
			outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arrived <- struct{}{}; mux.ServeHTTP(w, r) })
			url, client := serveHTTP(t, outer)
			grpcClient := serveGRPC(t, &health{check: func(ctx context.Context) error {
				bStarted.Store(true)
				arrived <- struct{}{}
				book.mu.Lock()
				book.values["7"] = "written by B"
				book.mu.Unlock()
				return nil
			}}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(guard.UnaryServerInterceptor(func(context.Context, string, any) string { return "7" }))})
			send := func(method, token string, body io.Reader) <-chan int {
				done := make(chan int, 1)
				go func() {
					req, _ := http.NewRequest(method, url+"/ledger/7", body)
					req.Header.Set(tokenHeader, token)
					resp, err := client.Do(req)
					if err != nil {
						done <- -1
						return
					}
					resp.Body.Close()
					done <- resp.StatusCode
				}()
				return done
			}

			slowBody, finishA := io.Pipe()
			aDone := send(http.MethodPut, wire("7", 41), slowBody)
			require.Eventually(t, func() bool { _, mark, _ := store.Read(context.Background(), "7"); return mark == 41 },
				5*time.Second, 5*time.Millisecond, "A was never admitted")
			<-arrived
			var bDone <-chan int
			switch via {
			case "same route":
				bDone = send(http.MethodPut, wire("7", 42), strings.NewReader("written by B"))
				<-arrived
			case "second route":
				bDone = send(http.MethodPost, wire("7", 42), strings.NewReader("written by B"))
				<-arrived
			case "gRPC method":
				done := make(chan int, 1)
				go func() {
					ctx := metadata.AppendToOutgoingContext(context.Background(), tokenMetadata, wire("7", 42))
					_, err := grpcClient.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
					done <- int(status.Code(err))
				}()
				bDone = done
			}
			assert.Never(t, bStarted.Load, 200*time.Millisecond, 5*time.Millisecond, "B ran while A, admitted first, was unfinished")
			_, _ = finishA.Write([]byte("written by A"))
			require.NoError(t, finishA.Close())
			assert.Equal(t, http.StatusNoContent, <-aDone)
			if via == "gRPC method" {
				assert.Equal(t, int(codes.OK), <-bDone)
				<-arrived
			} else {
				assert.Equal(t, http.StatusNoContent, <-bDone)
			}
			assert.Equal(t, "written by B", book.get("7"))
		})
	}
}

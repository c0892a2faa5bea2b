package middleware

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// newLocker returns a Locker taking cfg with tel, in a namespace of its own
// test unless cfg names one (two Lockers of one test share it: two
// replicas), closed when the test ends.
func newLocker(t *testing.T, c redis.UniversalClient, tel *telemetry.Telemetry, cfg lease.Config) *lease.Locker {
	if cfg.Namespace == "" {
		cfg.Namespace = leaseNamespace(t)
	}
	cfg.Telemetry = tel
	lk := lease.NewLocker(c, cfg)
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// leaseNamespace is the lease namespace of the test's Lockers (newLocker): a
// fence store checking their tokens needs it
// (fence.RedisConfig.LockNamespace), since a token's scope names its key
// within it.
func leaseNamespace(t *testing.T) string {
	ns := "mw" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if len(ns) > 60 {
		ns = ns[len(ns)-60:]
	}
	return ns
}

// mint is the unsigned token of fence n for the lock key key in lease's
// default namespace: what a lease of key from a Locker without secrets or
// namespace option carries, so what a guard keyed key with a default store
// admits.
func mint(key string, n int64) fence.Token { return fence.Mint("lockwatch", key, n, nil) }

// wire is mint(key, n) in its wire form, as it travels in the
// Fencing-Token header and the fencing-token metadata.
func wire(key string, n int64) string { return mint(key, n).String() }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// serveHTTP runs h on a real server on a loopback port and returns its URL
// and a client for it; both are closed when the test ends.
func serveHTTP(t *testing.T, h http.Handler) (string, *http.Client) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String(), client
}

// decodeProblem reads an application/problem+json answer.
func decodeProblem(t *testing.T, resp *http.Response) Problem {
	t.Helper()
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	var p Problem
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	return p
}

// health is a gRPC service (the standard health service, so no generated
// code is needed) whose Check and Watch run the test's work.
type health struct {
	grpc_health_v1.UnimplementedHealthServer
	check func(ctx context.Context) error
	watch func(stream grpc_health_v1.Health_WatchServer) error
}

func (h *health) Check(ctx context.Context, _ *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	if err := h.check(ctx); err != nil {
		return nil, err
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(_ *grpc_health_v1.HealthCheckRequest, stream grpc_health_v1.Health_WatchServer) error {
	return h.watch(stream)
}

// serveGRPC runs svc on a real gRPC server on a loopback port and returns a
// client; both are stopped when the test ends.
func serveGRPC(t testing.TB, svc *health, serverOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) grpc_health_v1.HealthClient {
	return grpc_health_v1.NewHealthClient(serveConn(t, func(s *grpc.Server) { grpc_health_v1.RegisterHealthServer(s, svc) }, serverOpts, dialOpts...))
}

// serveConn runs a real gRPC server on a loopback port with the services
// register adds, and returns a connection to it; both are closed when the
// test ends.
func serveConn(t testing.TB, register func(*grpc.Server), serverOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) *grpc.ClientConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(serverOpts...)
	register(srv)
	go func() { _ = srv.Serve(ln) }()
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	return conn
}

// metadataKey reads the lock key of a call from its "lock-key" metadata.
func metadataKey(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("lock-key"); len(v) == 1 {
		return v[0]
	}
	return ""
}

func withLockKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "lock-key", key)
}

// waitCancellationLatency waits until one cancellation latency is recorded
// for lock: it is, with the release's outcome, once the release sent after
// the answer is back.
func waitCancellationLatency(t *testing.T, h *telemetrytest.Harness, lock string) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, _ := h.Hist(t, obs.LeaseCancellationLatency, telemetrytest.Attrs(obs.AttrLockName, lock))
		return n == 1
	}, 10*time.Second, 5*time.Millisecond, "one cancellation latency recorded for %s", lock)
}

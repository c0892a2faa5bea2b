package middleware

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

const checkMethod = "/grpc.health.v1.Health/Check"

func unaryKey(ctx context.Context, _ string, _ any) string { return metadataKey(ctx) }
func streamKey(ctx context.Context, _ string) string       { return metadataKey(ctx) }

// lockedServer serves svc behind both interceptors of one Locker.
func lockedServer(t *testing.T, lk *lease.Locker, svc *health, cfg Config) grpc_health_v1.HealthClient {
	return serveGRPC(t, svc, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(UnaryServerInterceptor(lk, unaryKey, cfg)),
		grpc.ChainStreamInterceptor(StreamServerInterceptor(lk, streamKey, cfg)),
	})
}

// details returns a status error's ErrorInfo and RetryInfo.
func details(t *testing.T, err error) (codes.Code, *errdetails.ErrorInfo, *errdetails.RetryInfo) {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "not a status: %v", err)
	var info *errdetails.ErrorInfo
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.RetryInfo:
			retry = d
		}
	}
	require.NotNil(t, info, "no ErrorInfo in %v", st)
	assert.Equal(t, errorDomain, info.GetDomain())
	return st.Code(), info, retry
}

func TestGRPCTwoReplicasExclusion(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	var inside, most atomic.Int32
	svc := &health{check: func(ctx context.Context) error {
		if lease.FromContext(ctx) == nil {
			return status.Error(codes.Internal, "no lease in the handler's context")
		}
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		inside.Add(-1)
		return nil
	}}
	var clients []grpc_health_v1.HealthClient
	for range 2 {
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		clients = append(clients, lockedServer(t, lk, svc, Config{Lease: lease.Config{Wait: 10 * time.Second}}))
	}
	ctx := withLockKey(testCtx(t), "42")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := clients[i%2].Check(ctx, &grpc_health_v1.HealthCheckRequest{})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, most.Load(), "two replicas ran the same key at once")
	assert.EqualValues(t, 20, h.Sum(t, obs.LeaseAcquires,
		telemetrytest.Attrs(obs.AttrLockName, checkMethod, obs.AttrResult, "acquired")))
}

func TestGRPCAnswers(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)

	t.Run("contended: ABORTED with RetryInfo", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{TTL: 5 * time.Second})
		holder, err := lk.Acquire(ctx, "42")
		require.NoError(t, err)
		defer holder.Release(ctx)
		var ran atomic.Bool
		client := lockedServer(t, lk, &health{check: func(context.Context) error { ran.Store(true); return nil }}, Config{})
		_, err = client.Check(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
		code, info, retry := details(t, err)
		assert.Equal(t, codes.Aborted, code)
		assert.Equal(t, reasonContended, info.GetReason())
		assert.Equal(t, checkMethod, info.GetMetadata()["lock_name"])
		require.NotNil(t, retry)
		assert.InDelta(t, 5, retry.GetRetryDelay().AsDuration().Seconds(), 1)
		assert.False(t, ran.Load())
	})

	t.Run("lost and the handler gave up: UNAVAILABLE", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		client := lockedServer(t, lk, &health{check: func(ctx context.Context) error {
			<-ctx.Done()
			return status.FromContextError(context.Cause(ctx)).Err()
		}}, Config{Lease: lease.Config{MaxHold: 100 * time.Millisecond}})
		_, err := client.Check(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
		code, info, retry := details(t, err)
		assert.Equal(t, codes.Unavailable, code)
		assert.Equal(t, reasonLost, info.GetReason())
		assert.NotNil(t, retry)
	})

	t.Run("lost but the handler succeeded: late completion", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		client := lockedServer(t, lk, &health{check: func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}}, Config{Lease: lease.Config{MaxHold: 100 * time.Millisecond}})
		_, err := client.Check(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
		require.NoError(t, err, "the handler's answer stands")
		assert.EqualValues(t, 1, h.Sum(t, obs.LeaseLateCompletions, telemetrytest.Attrs(obs.AttrLockName, checkMethod)))
	})

	t.Run("stream context is the lease context", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		fences := make(chan int64, 1)
		client := lockedServer(t, lk, &health{watch: func(stream grpc_health_v1.Health_WatchServer) error {
			l := lease.FromContext(stream.Context())
			if l == nil {
				return status.Error(codes.Internal, "no lease on the stream")
			}
			fences <- int64(l.Fence())
			return stream.Send(&grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING})
		}}, Config{})
		stream, err := client.Watch(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
		require.NoError(t, err)
		_, err = stream.Recv()
		require.NoError(t, err)
		assert.Positive(t, <-fences)
		h.EventuallySum(t, obs.LeaseReleases, telemetrytest.Attrs(obs.AttrLockName,
			"/grpc.health.v1.Health/Watch", obs.AttrResult, "released"), 1)
	})

	t.Run("stream contended: ABORTED", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		holder, err := lk.Acquire(ctx, "42")
		require.NoError(t, err)
		defer holder.Release(ctx)
		client := lockedServer(t, lk, &health{watch: func(grpc_health_v1.Health_WatchServer) error { return nil }}, Config{})
		stream, err := client.Watch(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
		require.NoError(t, err)
		_, err = stream.Recv()
		code, info, _ := details(t, err)
		assert.Equal(t, codes.Aborted, code)
		assert.Equal(t, reasonContended, info.GetReason())
	})

	t.Run("no key: no lock", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		client := lockedServer(t, lk, &health{check: func(ctx context.Context) error {
			if lease.FromContext(ctx) != nil {
				return status.Error(codes.Internal, "locked without a key")
			}
			return nil
		}}, Config{})
		_, err := client.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
		require.NoError(t, err)
	})

	t.Run("panic releases the lease", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{TTL: time.Minute})
		// gRPC does not recover handler panics; a recovering interceptor
		// outside ours (as services install) turns it into an error.
		recoverer := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = status.Errorf(codes.Internal, "panic: %v", p)
				}
			}()
			return next(ctx, req)
		}
		client := serveGRPC(t, &health{check: func(context.Context) error { panic("boom") }}, []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(recoverer, UnaryServerInterceptor(lk, unaryKey, Config{})),
		})
		_, err := client.Check(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
		assert.Equal(t, codes.Internal, status.Code(err))
		l, err := lk.Acquire(ctx, "42")
		require.NoError(t, err, "the key is free at once, not after the TTL")
		require.NoError(t, l.Release(ctx))
	})
}

// TestGRPCHandlersOwnErrorSurvivesALoss: after a loss, only a handler error
// that is its context ending becomes LEASE_LOST; the handler's own answer
// stands.
func TestGRPCHandlersOwnErrorSurvivesALoss(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), telemetrytest.New(t).Tel, lease.Config{})
	client := lockedServer(t, lk, &health{check: func(ctx context.Context) error {
		<-ctx.Done()
		return status.Error(codes.NotFound, "no such invoice")
	}}, Config{Lease: lease.Config{MaxHold: 100 * time.Millisecond}})
	_, err := client.Check(withLockKey(testCtx(t), "42"), &grpc_health_v1.HealthCheckRequest{})
	assert.Equal(t, codes.NotFound, status.Code(err))
}

package middleware

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// TestTokenPropagation: calls made on a lease's context carry its token,
// over HTTP and gRPC (unary and stream); calls without one carry none.
func TestTokenPropagation(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), telemetrytest.New(t).Tel, lease.Config{})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer l.Release(ctx)
	want := l.Token().String() // the wire form, as the resource parses it
	parsed, err := fence.Parse(want)
	require.NoError(t, err)
	require.Equal(t, l.Token(), parsed, "the wire form carries the whole token")
	require.False(t, parsed.IsPlain(), "a lease's token names its key")

	headers := make(chan []string, 2)
	url, _ := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Values(tokenHeader)
	}))
	client := &http.Client{Transport: RoundTripper(&http.Transport{})}
	t.Cleanup(client.CloseIdleConnections)
	for _, c := range []struct {
		ctx  context.Context
		want []string
	}{{l.Context(), []string{want}}, {ctx, nil}} {
		req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, c.want, <-headers)
		assert.Empty(t, req.Header.Values(tokenHeader), "the caller's request is not modified")
	}

	got := make(chan []string, 2)
	record := func(ctx context.Context) {
		md, _ := metadata.FromIncomingContext(ctx)
		got <- md.Get(tokenMetadata)
	}
	grpcClient := serveGRPC(t, &health{
		check: func(ctx context.Context) error { record(ctx); return nil },
		watch: func(stream grpc_health_v1.Health_WatchServer) error {
			record(stream.Context())
			return stream.Send(&grpc_health_v1.HealthCheckResponse{})
		},
	}, nil, grpc.WithChainUnaryInterceptor(UnaryClientInterceptor()), grpc.WithChainStreamInterceptor(StreamClientInterceptor()))

	// A token already in the metadata is replaced, not doubled.
	callCtx := metadata.AppendToOutgoingContext(l.Context(), tokenMetadata, "1")
	_, err = grpcClient.Check(callCtx, &grpc_health_v1.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, []string{want}, <-got)
	stream, err := grpcClient.Watch(l.Context(), &grpc_health_v1.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	assert.Equal(t, []string{want}, <-got)
	_, err = grpcClient.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Empty(t, <-got)
}

package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockwatch/lockwatch/examples/internal/reportspb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun serves the example against a real redis-server: unary and
// streaming calls run under their lease, a concurrent call for the same
// account is ABORTED with LEASE_CONTENDED and RetryInfo, and the metrics
// show lockwatch's series beside otelgrpc's.
func TestRun(t *testing.T) {
	srv := redistest.Start(t)
	type addrs struct{ grpc, metrics string }
	ready := make(chan addrs, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{redis: srv.Addr(), listen: "127.0.0.1:0", metrics: "127.0.0.1:0", work: 3 * time.Second,
			ready: func(g, m string) { ready <- addrs{g, m} }})
	}()
	var a addrs
	select {
	case a = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(a.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	reports := reportspb.NewReportsClient(conn)
	callCtx, callCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer callCancel()

	// A stream for acct-1 holds its lease while it sends its pages...
	streamCtx := metadata.AppendToOutgoingContext(callCtx, "account", "acct-1")
	stream, err := reports.Stream(streamCtx, wrapperspb.String("acct-1"))
	require.NoError(t, err)
	first, err := stream.Recv()
	require.NoError(t, err)
	assert.Contains(t, first.GetValue(), "page 1 of 3")

	// ...so a unary call for acct-1 meanwhile is refused, one for acct-2 is not.
	_, err = reports.Generate(callCtx, wrapperspb.String("acct-1"))
	st := status.Convert(err)
	require.Equal(t, codes.Aborted, st.Code(), "%v", err)
	var reason string
	var retry bool
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration() > 0
		}
	}
	assert.Equal(t, "LEASE_CONTENDED", reason)
	assert.True(t, retry, "RetryInfo with a delay")

	other, err := reports.Generate(callCtx, wrapperspb.String("acct-2"))
	require.NoError(t, err)
	assert.Contains(t, other.GetValue(), "built under fence")

	pages := 1
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		pages++
	}
	assert.Equal(t, 3, pages)

	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	resp, err := client.Get("http://" + a.metrics + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	metrics := string(body)
	assert.Regexp(t, `(?m)^lockwatch_lease_acquires_total\{lock_name="/lockwatch.example.Reports/Generate",[^}]*result="contended"\} 1$`, metrics)
	assert.Regexp(t, `(?m)^lockwatch_lease_acquires_total\{lock_name="/lockwatch.example.Reports/Stream",[^}]*result="acquired"\} 1$`, metrics)
	assert.Contains(t, metrics, "rpc_server_call_duration_seconds_count", "otelgrpc's server metrics beside lockwatch's")

	cancel()
	require.NoError(t, <-done)
}

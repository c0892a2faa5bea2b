package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockwatch/lockwatch/examples/internal/reportspb"
)

// refusedWrites are the final writes' failures that the deposit route
// answers with middleware.WriteError and the report methods return for
// the interceptors to answer, by account, with the outcome the summary
// must count each as.
var refusedWrites = map[string]struct {
	err  error
	want outcome
}{
	"stale":    {fmt.Errorf("ledger: %w: a newer write", fence.ErrStale), outStale},
	"expiring": {fmt.Errorf("commit: %w", lease.ErrExpiring), outExpiring},
	"lost":     {fmt.Errorf("commit: %w", lease.ErrLost), outLost},
}

// TestRefusedWritesCountAsTheirOutcomes: the lockwatch answers to a stale,
// a too-late and a lost write, on the deposit route and on both report
// methods, are counted in the summary's answered row as stale, expiring
// and lost, never as failed.
func TestRefusedWritesCountAsTheirOutcomes(t *testing.T) {
	ctx := context.Background()
	srv, err := startRedis(ctx, "")
	require.NoError(t, err)
	defer srv.close()
	c := srv.client()
	defer c.Close()
	locker := lease.NewLocker(c, lease.Config{TTL: 2 * time.Second})
	defer locker.Close()

	conn := refusingReports(t, locker)
	w := &workload{d: &demo{cfg: config{ttl: 2 * time.Second}, replicas: []*replica{{httpURL: refusingDeposits(t, locker)}}},
		http: &http.Client{}, reports: []reportspb.ReportsClient{reportspb.NewReportsClient(conn)}}
	defer w.http.CloseIdleConnections()
	for account, tc := range refusedWrites {
		got, _ := w.deposit(ctx, 0, account)
		assert.Equal(t, outcomeNames[tc.want], outcomeNames[got], "deposit %s", account)
		assert.Equal(t, outcomeNames[tc.want], outcomeNames[w.generate(ctx, 0, account)], "generate %s", account)
		assert.Equal(t, outcomeNames[tc.want], outcomeNames[w.stream(ctx, 0, account)], "stream %s", account)
	}
}

// refusingDeposits serves the deposit route behind the holder middleware,
// answering each account's refused write as the demo's deposit does.
func refusingDeposits(t *testing.T, locker *lease.Locker) string {
	mux := http.NewServeMux()
	key := func(r *http.Request) string { return "account:" + r.PathValue("id") }
	mux.Handle("POST /accounts/{id}/deposit", middleware.HTTP(locker, key, middleware.Config{})(http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			middleware.WriteError(w, r, refusedWrites[r.PathValue("id")].err)
		})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// refusingReports serves the report methods behind the interceptors,
// returning each account's refused write through statusOf, and dials it.
func refusingReports(t *testing.T, locker *lease.Locker) *grpc.ClientConn {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer(
		grpc.ChainUnaryInterceptor(middleware.UnaryServerInterceptor(locker, func(_ context.Context, _ string, req any) string { return "report:" + accountOf(req) }, middleware.Config{})),
		grpc.ChainStreamInterceptor(middleware.StreamServerInterceptor(locker, func(ctx context.Context, _ string) string { return "report:" + accountFromMetadata(ctx) }, middleware.Config{})))
	reportspb.RegisterReportsServer(s, refusing{})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// refusing is a Reports server whose every report fails as its account's
// refused write.
type refusing struct{}

func (refusing) Generate(_ context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	return nil, statusOf(refusedWrites[in.GetValue()].err)
}

func (refusing) Stream(in *wrapperspb.StringValue, _ grpc.ServerStreamingServer[wrapperspb.StringValue]) error {
	return statusOf(refusedWrites[in.GetValue()].err)
}

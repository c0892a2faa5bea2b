// Command grpc is a minimal gRPC server whose calls run under fenced
// lockwatch leases: both lockwatch interceptors (unary and streaming, one
// core), with otelgrpc's stats handler beside them for the RPC spans and
// metrics, so that lockwatch's span events land on the server span.
//
//	go run ./examples/grpc -redis 127.0.0.1:6379
//	curl http://127.0.0.1:9464/metrics | grep lockwatch_
//
// The Reports service (examples/internal/reportspb, standing in for
// protoc-generated code) builds one report per account at a time: Generate
// (unary) takes the lease on "report:<account>" from the request, Stream
// (server streaming) from the "account" metadata, since its key function
// runs before the first message is read. A concurrent call for the same
// account is refused with ABORTED, reason LEASE_CONTENDED, and a RetryInfo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockwatch/lockwatch/examples/internal/reportspb"
)

type config struct {
	redis   string        // Redis address
	listen  string        // gRPC listen address
	metrics string        // /metrics listen address
	work    time.Duration // how long a report takes
	ready   func(grpcAddr, metricsAddr string)
}

func main() {
	var cfg config
	flag.StringVar(&cfg.redis, "redis", "127.0.0.1:6379", "Redis address (host:port)")
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:50051", "gRPC listen address")
	flag.StringVar(&cfg.metrics, "metrics", "127.0.0.1:9464", "listen address of /metrics")
	flag.DurationVar(&cfg.work, "work", 200*time.Millisecond, "how long a report takes")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpc:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done.
func run(ctx context.Context, cfg config) error {
	providers, err := otelsetup.New(ctx, otelsetup.Config{})
	if err != nil {
		return err
	}
	defer providers.Shutdown(context.Background())
	providers.SetGlobal() // lockwatch and otelgrpc report to the global providers

	client := redis.NewClient(&redis.Options{Addr: cfg.redis, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	if err := locker.Check(ctx); err != nil { // a Redis that could evict a held lock stops us here
		return err
	}

	unaryKey := func(_ context.Context, _ string, req any) string {
		if r, ok := req.(*wrapperspb.StringValue); ok && r.GetValue() != "" {
			return "report:" + r.GetValue()
		}
		return "" // no key: the call runs without a lease
	}
	streamKey := func(ctx context.Context, _ string) string {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("account"); len(v) == 1 && v[0] != "" {
			return "report:" + v[0]
		}
		return ""
	}
	srv := grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler()),
		grpc.ChainUnaryInterceptor(middleware.UnaryServerInterceptor(locker, unaryKey, middleware.Config{})),
		grpc.ChainStreamInterceptor(middleware.StreamServerInterceptor(locker, streamKey, middleware.Config{})),
	)
	reportspb.RegisterReportsServer(srv, reports{work: cfg.work})

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	mln, err := net.Listen("tcp", cfg.metrics)
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	metrics := &http.Server{Handler: providers.Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	go func() { served <- metrics.Serve(mln) }()
	if cfg.ready != nil {
		cfg.ready(ln.Addr().String(), mln.Addr().String())
	}
	fmt.Printf("serving gRPC on %s, metrics on http://%s/metrics\n", ln.Addr(), mln.Addr())

	received := 0
	select {
	case err = <-served: // a server failed
		received++
	case <-ctx.Done():
	}
	srv.GracefulStop() // waits for the calls in flight, so their leases are released
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(err, metrics.Shutdown(shutdown))
	for ; received < 2; received++ {
		if e := <-served; e != nil && !errors.Is(e, http.ErrServerClosed) {
			err = errors.Join(err, e)
		}
	}
	return err
}

// reports implements the service. Its handlers run under the lease: their
// context is the lease's, cancelled if the lease is lost.
type reports struct {
	work time.Duration
}

func (s reports) Generate(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	l := lease.FromContext(ctx)
	select {
	case <-time.After(s.work):
	case <-ctx.Done():
		return nil, context.Cause(ctx) // lease lost: the interceptor answers UNAVAILABLE LEASE_LOST
	}
	return wrapperspb.String(fmt.Sprintf("report %s built under fence %d", in.GetValue(), l.Fence())), nil
}

func (s reports) Stream(in *wrapperspb.StringValue, stream grpc.ServerStreamingServer[wrapperspb.StringValue]) error {
	ctx := stream.Context() // the lease's context
	l := lease.FromContext(ctx)
	for page := 1; page <= 3; page++ {
		select {
		case <-time.After(s.work / 3):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		msg := fmt.Sprintf("report %s, page %d of 3, fence %d", in.GetValue(), page, l.Fence())
		if err := stream.Send(wrapperspb.String(msg)); err != nil {
			return err
		}
	}
	return nil
}

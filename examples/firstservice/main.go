// Command firstservice is the README's "Your first service": orders that
// two HTTP routes and a gRPC method change, one replica at a time per
// order, each change written to PostgreSQL through a fenced table, with
// /metrics and the live page of the leases on an internal listener.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver for database/sql
	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// schema is the fenced table: last_fence holds the token of the newest
// write, and a write with an older token changes nothing.
const schema = `CREATE TABLE IF NOT EXISTS orders (
	id         text PRIMARY KEY,
	state      text NOT NULL,
	replica    text NOT NULL,
	last_fence bigint NOT NULL DEFAULT 0
)`

type config struct {
	redis, dsn, http, grpc, admin, name string
	ttl, writeDelay                     time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.redis, "redis", env("REDIS_ADDR", "127.0.0.1:6379"), "Redis address of the leases ($REDIS_ADDR)")
	flag.StringVar(&c.dsn, "dsn", env("DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL ($DATABASE_URL)")
	flag.StringVar(&c.http, "http", env("HTTP_ADDR", "127.0.0.1:8081"), "HTTP API address ($HTTP_ADDR)")
	flag.StringVar(&c.grpc, "grpc", env("GRPC_ADDR", "127.0.0.1:50051"), "gRPC address ($GRPC_ADDR)")
	flag.StringVar(&c.admin, "admin", env("ADMIN_ADDR", "127.0.0.1:9464"), "internal address: /metrics, /debug/lockwatch ($ADMIN_ADDR)")
	flag.StringVar(&c.name, "name", env("REPLICA", "a"), "this replica's name, written with each order and named in other replicas' refusals ($REPLICA)")
	flag.DurationVar(&c.ttl, "ttl", 5*time.Second, "lease TTL")
	flag.DurationVar(&c.writeDelay, "write-delay", 0, "a slow database: each write waits this long before its statement")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, c)
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, c config) error {
	providers, err := otelsetup.New(ctx, otelsetup.Config{}) // a Prometheus exporter
	if err != nil {
		return err
	}
	defer providers.Shutdown(context.Background())
	providers.SetGlobal() // lockwatch records to the global providers

	client := redis.NewClient(&redis.Options{Addr: c.redis, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: c.ttl, Replica: c.name}) // other replicas' refusals name it
	defer locker.Close()
	if err := locker.Check(ctx); err != nil { // a Redis that could evict a held lease stops us here
		return err
	}

	// A fence.Table writes through database/sql (fence.DB: *sql.DB, *sql.Tx
	// or *sql.Conn). A pgxpool.Pool goes through pgx's stdlib adapter:
	// db := stdlib.OpenDBFromPool(pool).
	db, err := sql.Open("pgx", c.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	orders, err := fence.NewPostgresTable(fence.TableConfig{
		Table: "orders", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"state", "replica"},
		LockKey: func(id any) string { return orderKey(id.(string)) }, // a row takes the tokens of its order's lease
	})
	if err != nil {
		return err
	}
	s := &service{db: db, orders: orders, name: c.name, writeDelay: c.writeDelay}

	// The holder side: every entry point that changes an order holds the
	// lease on "order:<id>", so the routes and the method take turns.
	lockOrder := middleware.HTTP(locker, func(r *http.Request) string { return orderKey(r.PathValue("id")) }, middleware.Config{})
	api := http.NewServeMux()
	api.Handle("POST /orders/{id}/ship", lockOrder(s.handle("shipped")))
	api.Handle("POST /orders/{id}/cancel", lockOrder(s.handle("cancelled")))
	rpcKey := func(ctx context.Context, fullMethod string, req any) string {
		if in, ok := req.(*wrapperspb.StringValue); ok && fullMethod == "/orders.Orders/Ship" {
			return orderKey(in.GetValue())
		}
		return "" // another method: it runs without a lease
	}
	rpc := grpc.NewServer(grpc.ChainUnaryInterceptor(middleware.UnaryServerInterceptor(locker, rpcKey, middleware.Config{})))
	rpc.RegisterService(&ordersService, s)

	admin := http.NewServeMux() // an internal port only
	admin.Handle("GET /metrics", providers.Handler())
	admin.Handle("/debug/lockwatch", debugpage.Handler(locker))
	return serve(ctx, c, api, admin, rpc)
}

func orderKey(id string) string { return "order:" + id }

type service struct {
	db         *sql.DB
	orders     fence.Table
	name       string
	writeDelay time.Duration
}

// write is how the service writes an order: inside the lease's Commit,
// with the ctx and token Commit gives. Commit runs it on a context the
// lease's loss does not cancel, and the token goes into the statement that
// compares it with the row's last_fence, so a write that comes late still
// reaches the table, which refuses it (fence.ErrStale) and counts it.
func (s *service) write(ctx context.Context, id, state string) (int64, error) {
	l := lease.FromContext(ctx) // the middleware's lease
	err := l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
		log.Printf("replica %s: writing order %s with fence %d", s.name, id, token.Fence)
		time.Sleep(s.writeDelay) // -write-delay: the window the README's pause recipe uses
		return s.orders.Upsert(ctx, s.db, id, token, state, s.name)
	})
	return l.Fence(), err
}

func (s *service) handle(state string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := s.write(r.Context(), r.PathValue("id"), state)
		if err != nil { // a newer lease wrote first, the lease is lost or about to expire, or the database failed
			log.Printf("replica %s: order %s not written: %v", s.name, r.PathValue("id"), err)
			middleware.WriteError(w, r, err) // 409 FENCE_STALE, 503 LEASE_LOST or LEASE_EXPIRING, else 500
			return
		}
		fmt.Fprintf(w, "order %s %s by %s with fence %d\n", r.PathValue("id"), state, s.name, f)
	})
}

func (s *service) ship(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	f, err := s.write(ctx, in.GetValue(), "shipped")
	if err != nil {
		return nil, err // the interceptor answers ABORTED FENCE_STALE, UNAVAILABLE LEASE_LOST or LEASE_EXPIRING
	}
	return wrapperspb.String(fmt.Sprintf("order %s shipped by %s with fence %d", in.GetValue(), s.name, f)), nil
}

// ordersService stands in for protoc's output for
// service Orders { rpc Ship(google.protobuf.StringValue) returns (google.protobuf.StringValue); }
var ordersService = grpc.ServiceDesc{
	ServiceName: "orders.Orders",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Ship", Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		req := new(wrapperspb.StringValue)
		if err := dec(req); err != nil {
			return nil, err
		}
		ship := func(ctx context.Context, req any) (any, error) {
			return srv.(*service).ship(ctx, req.(*wrapperspb.StringValue))
		}
		return in(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/orders.Orders/Ship"}, ship)
	}}},
}

// serve serves until ctx ends, then lets the requests in flight finish.
func serve(ctx context.Context, c config, api, admin http.Handler, rpc *grpc.Server) error {
	var lns [3]net.Listener
	for i, addr := range []string{c.http, c.grpc, c.admin} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		defer ln.Close()
		lns[i] = ln
	}
	apiSrv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	adminSrv := &http.Server{Handler: admin, ReadHeaderTimeout: 5 * time.Second}
	failed := make(chan error, 3)
	go func() { failed <- apiSrv.Serve(lns[0]) }()
	go func() { failed <- rpc.Serve(lns[1]) }()
	go func() { failed <- adminSrv.Serve(lns[2]) }()
	log.Printf("replica %s: HTTP on %s, gRPC on %s, /metrics and /debug/lockwatch on %s", c.name, lns[0].Addr(), lns[1].Addr(), lns[2].Addr())
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rpc.GracefulStop()
	return errors.Join(apiSrv.Shutdown(shutdown), adminSrv.Shutdown(shutdown))
}

// env is the environment variable name, if set, else def.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Command http is a minimal net/http service that runs each payment of an
// invoice under a fenced lockwatch lease, so that two replicas never pay
// the same invoice at once, and stores the payment through a fenced store,
// so that a replica that lost its lease cannot overwrite a newer payment.
//
//	go run ./examples/http -redis 127.0.0.1:6379
//	go run ./examples/http -redis 127.0.0.1:6379 -fence-redis 127.0.0.1:6380
//	curl -X POST http://127.0.0.1:8080/invoices/42/pay
//	curl http://127.0.0.1:8080/metrics | grep lockwatch_
//	open http://127.0.0.1:8080/debug/lockwatch
//
// /debug/lockwatch is the live page of the leases this process holds
// (package debugpage; ?format=json for JSON). It is on the one listener here
// to keep the example small; a real service puts it, like net/http/pprof,
// on an internal port only.
//
// Two requests for one invoice at once: one is paid, the other answered
// 409 with Retry-After (problem+json, reason LEASE_CONTENDED). The lock
// name in metrics is the route, POST /invoices/{id}/pay, never the id.
//
// The leases and the payments may live on two Redis servers, and only the
// payments' must keep its data. A lock Redis that restarts empty loses the
// locks, and the fencing tokens of the next leases are still larger (they
// follow the server clock); a fence store that restarts empty loses its
// marks, and then accepts the late write of any older lease. So the store
// is checked at start (fence.RedisStore.Check): on a Redis that keeps
// neither an append-only file nor snapshots (appendonly yes is best) the
// example refuses to start. -fence-redis defaults to -redis: one Redis with
// persistence serves both.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
	"github.com/redis/go-redis/v9"
)

type config struct {
	redis  string        // Redis address of the leases
	fence  string        // Redis address of the payments' fenced store; "" for redis
	listen string        // HTTP listen address
	work   time.Duration // how long a payment takes
	ready  func(addr string)
}

func main() {
	var cfg config
	flag.StringVar(&cfg.redis, "redis", "127.0.0.1:6379", "Redis address of the leases (host:port)")
	flag.StringVar(&cfg.fence, "fence-redis", "", "Redis address of the payments' fenced store, which must keep its data (appendonly yes); default: -redis")
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "HTTP listen address")
	flag.DurationVar(&cfg.work, "work", 200*time.Millisecond, "how long a payment takes")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "http:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done.
func run(ctx context.Context, cfg config) error {
	// OpenTelemetry SDK with a Prometheus endpoint; lockwatch reports to the
	// global providers.
	providers, err := otelsetup.New(ctx, otelsetup.Config{})
	if err != nil {
		return err
	}
	defer providers.Shutdown(context.Background())
	providers.SetGlobal()

	// ContextTimeoutEnabled: renewal deadlines also bound socket reads.
	client := redis.NewClient(&redis.Options{Addr: cfg.redis, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	if err := locker.Check(ctx); err != nil { // a Redis that could evict a held lock stops us here
		return err
	}
	storeClient := client
	if cfg.fence != "" && cfg.fence != cfg.redis {
		storeClient = redis.NewClient(&redis.Options{Addr: cfg.fence, ContextTimeoutEnabled: true})
		defer storeClient.Close()
	}
	payments := fence.NewRedisStore(storeClient, "payments", fence.RedisConfig{})
	if err := payments.Check(ctx); err != nil { // a Redis that would forget the marks on a restart stops us here
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("POST /invoices/{id}/pay", lockInvoice(locker)(pay(payments, cfg.work)))
	mux.Handle("GET /metrics", providers.Handler())
	mux.Handle("/debug/lockwatch", debugpage.Handler(locker))

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if cfg.ready != nil {
		cfg.ready(ln.Addr().String())
	}
	fmt.Printf("serving on http://%s (POST /invoices/{id}/pay, GET /metrics, GET /debug/lockwatch)\n", ln.Addr())

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown) // waits for the requests in flight, so their leases are released
	if served := <-served; !errors.Is(served, http.ErrServerClosed) {
		err = errors.Join(err, served)
	}
	return err
}

// lockInvoice runs each payment under the lease on its invoice.
func lockInvoice(locker *lease.Locker) func(http.Handler) http.Handler {
	return middleware.HTTP(locker, func(r *http.Request) string { return "invoice:" + r.PathValue("id") }, middleware.Config{})
}

// pay runs under the lease on the invoice: the request's context is the
// lease's, cancelled if the lease is lost.
func pay(payments *fence.RedisStore, work time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		l := lease.FromContext(ctx)
		select {
		case <-time.After(work): // charge the card, ...
		case <-ctx.Done():
			return // lease lost: the middleware answers 503 LEASE_LOST
		}
		// The final write carries the lease's fencing token; the store
		// refuses it if a newer lease has written this invoice already.
		// Commit runs it on a context the lease's loss does not cancel, so
		// that a late write reaches the fence and is rejected there.
		err := l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
			return payments.Write(ctx, "invoice:"+r.PathValue("id"), token, []byte("paid"))
		})
		switch {
		case errors.Is(err, fence.ErrStale):
			http.Error(w, "a newer payment of this invoice was recorded", http.StatusConflict)
			return
		case errors.Is(err, lease.ErrLost):
			return // the middleware answers 503 LEASE_LOST
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"invoice": r.PathValue("id"), "paid": true, "fence": l.Fence()})
	})
}

package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
)

// addr is the Redis the examples use; the test binary points it at a
// private loopback redis-server.
var addr = "localhost:6379"

func ExampleHTTP() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{})
	defer locker.Close()

	lockInvoice := middleware.HTTP(locker, func(r *http.Request) string { return "invoice:" + r.PathValue("id") }, middleware.Config{})
	mux := http.NewServeMux()
	mux.Handle("POST /invoices/{id}/pay", lockInvoice(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := lease.FromContext(r.Context()) // the handler's context is the lease's
		fmt.Fprintln(w, "paying invoice", l.Key(), "with a fence:", l.Fence() > 0)
	})))

	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/invoices/7/pay", "text/plain", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output: 200 paying invoice invoice:7 with a fence: true
}

// By default the key is deleted in the background once the handler has
// returned. Config.SyncRelease waits for the delete before the answer
// goes out: a client's next request on the same key then succeeds on any
// replica at once.
func ExampleConfig_syncRelease() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{Namespace: "example-sync-release"})
	defer locker.Close()
	other := lease.NewLocker(client, lease.Config{Namespace: "example-sync-release"}) // another replica
	defer other.Close()

	lockJob := middleware.HTTP(locker, func(r *http.Request) string { return r.PathValue("id") }, middleware.Config{SyncRelease: true})
	mux := http.NewServeMux()
	mux.Handle("POST /jobs/{id}", lockJob(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := srv.Client().Post(srv.URL+"/jobs/9", "text/plain", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	l, err := other.Acquire(context.Background(), "9") // the key is already free
	fmt.Println(resp.StatusCode, err == nil)
	if err == nil {
		_ = l.Release(context.Background())
	}
	// Output: 200 true
}

// A custom error writer gets each HTTP refusal as a Problem. One function
// serves the holder middleware and a Guard alike.
func ExampleConfig_errorWriter() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{Namespace: "example-error-writer"})
	defer locker.Close()
	plain := func(w http.ResponseWriter, _ *http.Request, p *middleware.Problem) {
		http.Error(w, p.Reason, p.Status)
	}

	account := func(r *http.Request) string { return "account:" + r.PathValue("id") }
	lockAccount := middleware.HTTP(locker, account, middleware.Config{ErrorWriter: plain})
	guard := middleware.NewGuard(fence.NewRedisStore(client, "ledger", fence.RedisConfig{Namespace: "example-error-writer"}), middleware.GuardConfig{ErrorWriter: plain})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux := http.NewServeMux()
	mux.Handle("POST /accounts/{id}/payments", lockAccount(ok))
	mux.Handle("PUT /accounts/{id}", guard.HTTP(account)(ok))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/accounts/7", nil) // no token
	resp, err := srv.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output: 428 FENCE_MISSING
}

// One Guard in front of a ledger serves every entry point that writes it:
// two HTTP routes and a gRPC method share its per-key serialization and
// the store's high-water mark, so once token 41 has written account 7 on
// one route, token 40 is refused on every other one too. The key functions
// return the lock key the writers hold, account:7: the tokens are minted
// for it (here by fence.Mint, as a lease of account:7 would).
func ExampleGuard() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	guard := middleware.NewGuard(fence.NewRedisStore(client, "ledger", fence.RedisConfig{Namespace: "example-guard"}), middleware.GuardConfig{})

	account := func(r *http.Request) string { return "account:" + r.PathValue("id") }
	write := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent) // the write, under the admitted token
	})
	mux := http.NewServeMux()
	mux.Handle("PUT /accounts/{id}", guard.HTTP(account)(write))
	mux.Handle("POST /accounts/{id}/deposits", guard.HTTP(account)(write))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The health service stands in for a gRPC service that writes the
	// account named in its request.
	rpc := grpc.NewServer(grpc.UnaryInterceptor(guard.UnaryServerInterceptor(
		func(_ context.Context, _ string, req any) string {
			return "account:" + req.(*grpc_health_v1.HealthCheckRequest).GetService()
		})))
	accounts := health.NewServer()
	accounts.SetServingStatus("7", grpc_health_v1.HealthCheckResponse_SERVING)
	grpc_health_v1.RegisterHealthServer(rpc, accounts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = rpc.Serve(ln) }()
	defer rpc.Stop()
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	token := func(n int64) fence.Token { return fence.Mint("lockwatch", "account:7", n, nil) }
	send := func(method, path string, n int64) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Header.Set("Fencing-Token", token(n).String())
		resp, err := srv.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(method, path, n, resp.StatusCode)
	}
	call := func(n int64) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "fencing-token", token(n).String())
		_, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "7"})
		fmt.Println("Check 7", n, status.Code(err))
	}
	send(http.MethodPut, "/accounts/7", 41)
	send(http.MethodPost, "/accounts/7/deposits", 40)
	call(40)
	call(42)
	send(http.MethodPut, "/accounts/7", 41)
	// Output:
	// PUT /accounts/7 41 204
	// POST /accounts/7/deposits 40 409
	// Check 7 40 Aborted
	// Check 7 42 OK
	// PUT /accounts/7 41 409
}

// The holder side on gRPC: each call holds the lease on its key while the
// method runs, and a call whose key is held is refused ABORTED. The health
// service stands in for a service that works on the order its request names.
func ExampleUnaryServerInterceptor() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{Namespace: "example-grpc"})
	defer locker.Close()

	order := func(_ context.Context, _ string, req any) string {
		return "order:" + req.(*grpc_health_v1.HealthCheckRequest).GetService()
	}
	show := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		fmt.Println("holding", lease.FromContext(ctx).Key()) // the method's context is the lease's
		return next(ctx, req)
	}
	rpc := grpc.NewServer(grpc.ChainUnaryInterceptor(middleware.UnaryServerInterceptor(locker, order, middleware.Config{}), show))
	orders := health.NewServer()
	orders.SetServingStatus("7", grpc_health_v1.HealthCheckResponse_SERVING)
	grpc_health_v1.RegisterHealthServer(rpc, orders)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = rpc.Serve(ln) }()
	defer rpc.Stop()
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	call := func() {
		_, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "7"})
		if err != nil {
			fmt.Println(status.Code(err), status.Convert(err).Message())
			return
		}
		fmt.Println("OK")
	}

	call()
	held, _ := locker.Acquire(ctx, "order:7") // another request of this replica
	call()
	_ = held.Release(ctx)
	// Output:
	// holding order:7
	// OK
	// Aborted another request on this replica is doing this work
}

// A write that may outlive its handler goes through Guarded: the key stays
// held while it runs, and once the handler has returned it is refused. The
// http.TimeoutHandler goes outside the guard, so that the guard holds the
// key until the handler really returns, whatever the timeout answered.
func ExampleGuarded() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	guard := middleware.NewGuard(fence.NewRedisStore(client, "ledger", fence.RedisConfig{Namespace: "example-guarded"}), middleware.GuardConfig{})

	var mu sync.Mutex
	balance := 0 // the resource: written only through Guarded
	add := func(amount int) func() error {
		return func() error { mu.Lock(); balance += amount; mu.Unlock(); return nil }
	}
	late := make(chan error, 1)
	deposit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if err := middleware.Guarded(ctx, add(10)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		go func() {
			<-ctx.Done() // the handler has returned: the admission is over
			late <- middleware.Guarded(ctx, add(1000))
		}()
		w.WriteHeader(http.StatusNoContent)
	})
	account := func(r *http.Request) string { return "account:" + r.PathValue("id") }
	mux := http.NewServeMux()
	mux.Handle("POST /accounts/{id}/deposits", http.TimeoutHandler(guard.HTTP(account)(deposit), 5*time.Second, "timed out"))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/accounts/7/deposits", nil)
	req.Header.Set("Fencing-Token", fence.Mint("lockwatch", "account:7", 41, nil).String()) // a lease's token
	resp, err := srv.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	fmt.Println(errors.Is(<-late, middleware.ErrNotAdmitted))
	mu.Lock()
	fmt.Println(balance)
	mu.Unlock()
	// Output:
	// 204
	// true
	// 10
}

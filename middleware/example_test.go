package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
)

// addr is the Redis the examples use; the test binary points it at a
// private loopback redis-server.
var addr = "localhost:6379"

func ExampleHTTP() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client)
	defer locker.Close()

	lockInvoice := middleware.HTTP(locker, func(r *http.Request) string { return "invoice:" + r.PathValue("id") })
	mux := http.NewServeMux()
	mux.Handle("POST /invoices/{id}/pay", lockInvoice(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := lease.FromContext(r.Context()) // the handler's context is the lease's
		fmt.Fprintln(w, "paying under lease", l.Name(), "with a fence:", l.Fence() > 0)
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
	// Output: 200 paying under lease POST /invoices/{id}/pay with a fence: true
}

// By default the key is deleted in the background once the handler has
// returned. WithSyncRelease waits for the delete before the answer goes
// out: a client's next request on the same key then succeeds on any
// replica at once.
func ExampleWithSyncRelease() {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.WithNamespace("example-sync-release"))
	defer locker.Close()
	other := lease.NewLocker(client, lease.WithNamespace("example-sync-release")) // another replica
	defer other.Close()

	lockJob := middleware.HTTP(locker, func(r *http.Request) string { return r.PathValue("id") }, middleware.WithSyncRelease())
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

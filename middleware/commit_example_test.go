package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
)

// The handler's write goes through Commit, with the context and token
// Commit passes, and the token goes to the store that checks it. Here the
// lease is lost inside the write (its max hold passes), another replica
// takes the order and writes it, and then the late write goes out: it
// reaches the store, which refuses it, and WriteError answers the refusal
// as the table says. Made on r.Context(), the lost lease's context, the
// write would have been cancelled before the store saw it.
func ExampleHTTP_commit() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{Namespace: "example-commit", TTL: 300 * time.Millisecond, MaxHold: 100 * time.Millisecond})
	defer locker.Close()
	other := lease.NewLocker(client, lease.Config{Namespace: "example-commit", Wait: 5 * time.Second}) // another replica
	defer other.Close()
	orders := fence.NewRedisStore(client, "orders", fence.RedisConfig{Namespace: "example-commit", LockNamespace: "example-commit"})

	writing, overtaken := make(chan struct{}), make(chan struct{})
	ship := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := lease.FromContext(r.Context())
		err := l.Commit(r.Context(), func(ctx context.Context, token fence.Token) error {
			close(writing)
			<-r.Context().Done() // the lease is lost...
			<-overtaken          // ...and another replica writes first
			return orders.Write(ctx, l.Key(), token, []byte("shipped"))
		})
		if err != nil {
			middleware.WriteError(w, r, err) // the stale write: 409 FENCE_STALE
		}
	})
	lockOrder := middleware.HTTP(locker, func(r *http.Request) string { return "order:" + r.PathValue("id") }, middleware.Config{})
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/ship", lockOrder(ship))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	answer := make(chan string, 1)
	go func() {
		resp, err := srv.Client().Post(srv.URL+"/orders/7/ship", "text/plain", nil)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answer <- fmt.Sprint(resp.StatusCode, " ", string(body))
	}()
	<-writing
	l, err := other.Acquire(ctx, "order:7") // once the lost lease's key is free
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("other replica:", l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
		return orders.Write(ctx, "order:7", token, []byte("cancelled"))
	}))
	_ = l.Release(ctx)
	close(overtaken)
	fmt.Print("first replica: ", <-answer)
	// Output:
	// other replica: <nil>
	// first replica: 409 {"type":"urn:lockwatch:problem:FENCE_STALE","title":"Stale fencing token","status":409,"detail":"a newer lease holder has already written","reason":"FENCE_STALE","lock_name":"POST /orders/{id}/ship"}
}

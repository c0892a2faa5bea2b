package debugpage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/lease"
)

// addr is the Redis the example uses; the test binary points it at a
// private loopback redis-server.
var addr = "localhost:6379"

func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{Name: "invoices"})
	defer locker.Close()

	// Mount it beside net/http/pprof, on an internal listener: here a test
	// server stands for it.
	mux := http.NewServeMux()
	mux.Handle("/debug/lockwatch", debugpage.Handler(locker))
	internal := httptest.NewServer(mux)
	defer internal.Close()

	l, err := locker.Acquire(ctx, "invoice:42")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer l.Release(ctx)

	// A browser gets the HTML page; a script asks for ?format=json.
	resp, err := internal.Client().Get(internal.URL + "/debug/lockwatch?format=json")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer resp.Body.Close()
	var page struct {
		Leases []struct {
			Name  string `json:"name"`
			Key   string `json:"key"`
			Fence int64  `json:"fence"`
		} `json:"leases"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, held := range page.Leases {
		fmt.Printf("%s: fence is the lease's: %v; raw key shown: %v\n", held.Name, held.Fence == l.Fence(), held.Key != "")
	}
	// Output:
	// invoices: fence is the lease's: true; raw key shown: false
}

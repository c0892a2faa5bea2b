package bench

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
)

// BenchmarkHTTP measures a loopback net/http server with a trivial handler,
// plain, with one PING in the handler, around the raw floor's lock (SET NX PX, then the compare-and-delete
// before the answer), and wrapped in middleware.HTTP with a key per request
// (from the URL path), by default (locked: the key is deleted in the background after
// the handler returns) and with middleware.Config.SyncRelease (locked-sync:
// the answer waits for the delete), from 1 and from 16 keep-alive clients,
// beside a PING on the same redis-server from as many goroutines. ns/op is the inverse of the
// throughput; p50-ns and p99-ns are per-request latencies as the client saw
// them, and rtt/op the Redis round trips per request.
func BenchmarkHTTP(b *testing.B) {
	loopbackOnly(b, sharedAddr)
	c, rt := counted(b, sharedAddr)
	ns := "http" + strconv.FormatInt(time.Now().UnixNano(), 36)
	lk := lease.NewLocker(c, lease.Config{Namespace: ns, Telemetry: telemetryOff()})
	b.Cleanup(func() { _ = lk.Close() })

	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux := http.NewServeMux()
	mux.Handle("/plain/", ok)
	// One Redis round trip as a handler sees it: the unit of the added
	// latency, beside a PING from a benchmark loop.
	mux.HandleFunc("/ping/", func(w http.ResponseWriter, r *http.Request) {
		if err := c.Ping(r.Context()).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		ok.ServeHTTP(w, r)
	})
	// The floor of a lock around the handler: SET NX PX before, the
	// compare-and-delete after, both on the request's path.
	mux.HandleFunc("/raw/", func(w http.ResponseWriter, r *http.Request) {
		key, owner := ns+"-raw:"+r.URL.Path, rand.Text()
		if got, err := c.SetNX(r.Context(), key, owner, cycleTTL).Result(); err != nil || !got {
			http.Error(w, "not acquired", http.StatusConflict)
			return
		}
		ok.ServeHTTP(w, r)
		_ = rawRelease.Run(context.WithoutCancel(r.Context()), c, []string{key}, owner).Err()
	})
	byPath := func(r *http.Request) string { return r.URL.Path }
	mux.Handle("/locked/", middleware.HTTP(lk, byPath, middleware.Config{})(ok))
	mux.Handle("/locked-sync/", middleware.HTTP(lk, byPath, middleware.Config{SyncRelease: true})(ok))
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	loopbackOnly(b, srv.Listener.Addr().String())
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	var seq atomic.Int64 // a fresh key for every request
	get := func(route string) error {
		url := srv.URL + route + strconv.FormatInt(seq.Add(1), 36)
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = &statusError{url: url, code: resp.StatusCode}
		}
		return err
	}
	ctx := context.Background()
	ops := []struct {
		name string
		op   func() error
	}{
		{"ping", func() error { return c.Ping(ctx).Err() }},
		{"plain", func() error { return get("/plain/") }},
		{"ping-handler", func() error { return get("/ping/") }},
		{"raw", func() error { return get("/raw/") }},
		{"locked", func() error { return get("/locked/") }},
		{"locked-sync", func() error { return get("/locked-sync/") }},
	}
	for _, clients := range []int{1, 16} {
		for _, o := range ops {
			b.Run("c"+strconv.Itoa(clients)+"/"+o.name, func(b *testing.B) {
				var lat latencies
				measure(b, rt, func() {
					if clients == 1 {
						d := make([]time.Duration, 0, 1<<14)
						for b.Loop() {
							t := time.Now()
							if err := o.op(); err != nil {
								b.Fatal(err)
							}
							d = append(d, time.Since(t))
						}
						lat.add(d)
						return
					}
					parallel16(b)
					b.RunParallel(func(pb *testing.PB) {
						d := make([]time.Duration, 0, 1<<12)
						defer func() { lat.add(d) }()
						for pb.Next() {
							t := time.Now()
							if err := o.op(); err != nil {
								b.Error(err)
								return
							}
							d = append(d, time.Since(t))
						}
					})
				})
				reportQuantiles(b, lat.all, "", time.Nanosecond, "ns", 0.50, 0.99)
			})
		}
	}
}

type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string { return e.url + ": HTTP " + strconv.Itoa(e.code) }

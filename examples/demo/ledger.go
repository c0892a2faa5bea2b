package main

import (
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/middleware"
)

// ledger is the downstream resource every replica writes to: a small HTTP
// service keeping one value per lock key. Its writes sit behind
// a middleware.Guard over a fence.RedisStore, which admits a write only if
// its Fencing-Token is at least the newest the key has seen (one lease may
// write several times) and answers 409 FENCE_STALE otherwise, counting a
// rejection (lockwatch_fence_rejections_total{resource="ledger"}).
//
// A guard is a fence only for a service that serializes what it admits:
// between the admission and the write, another request with a newer token
// could be admitted and write first, and the older write would then land
// last. The ledger holds one mutex across both.
type ledger struct {
	srv *http.Server
	url string

	mu      sync.Mutex
	entries map[string]ledgerEntry
}

// ledgerEntry is a key's value and the token of the write that set it.
type ledgerEntry struct {
	Value string `json:"value"`
	Fence int64  `json:"fence,omitempty"`
}

func newLedger(d *demo) (*ledger, error) {
	lg := &ledger{entries: map[string]ledgerEntry{}}
	// The entries live in this process and the guard's marks in the demo's
	// Redis: the marks must last as long as the entries, or a late write
	// with an older token would be admitted after a restart of that Redis.
	// The embedded Redis ends with the process and the demo's faults never
	// restart one; a service keeps its marks on a Redis with persistence,
	// checked at start-up (fence.RedisStore.Check, as examples/http does).
	store := fence.NewRedisStore(d.ledgerRedis, "ledger", fence.RedisConfig{Namespace: namespace + ":fence", LockNamespace: namespace, Telemetry: d.tel})
	guard := middleware.NewGuard(store, middleware.GuardConfig{}).HTTP(func(r *http.Request) string { return r.PathValue("key") })

	mux := http.NewServeMux()
	mux.Handle("GET /ledger/{key}", d.traced(http.HandlerFunc(lg.get)))
	mux.Handle("PUT /ledger/{key}", d.traced(lg.serialized(guard(http.HandlerFunc(lg.put)))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lg.url = "http://" + ln.Addr().String()
	lg.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	d.serve(func() error { return ignoreClosed(lg.srv.Serve(ln)) })
	return lg, nil
}

// serialized runs the guard and the write under one lock.
func (lg *ledger) serialized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lg.mu.Lock()
		defer lg.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// fenceOf is the token of the write that set key's value, 0 for none.
func (lg *ledger) fenceOf(key string) int64 {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return lg.entries[key].Fence
}

func (lg *ledger) get(w http.ResponseWriter, r *http.Request) {
	lg.mu.Lock()
	e := lg.entries[r.PathValue("key")]
	lg.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(e)
}

// put runs after the guard admitted the request's token (and under the
// ledger's lock).
func (lg *ledger) put(w http.ResponseWriter, r *http.Request) {
	var e ledgerEntry
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if tok, ok := fence.FromContext(r.Context()); ok { // the guard put the admitted token there
		e.Fence = tok.Fence
	}
	lg.entries[r.PathValue("key")] = e
	w.WriteHeader(http.StatusOK)
}

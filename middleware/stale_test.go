package middleware

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// ledger is a downstream resource behind a fence guard: it keeps the last
// value written per key.
type ledger struct {
	mu     sync.Mutex
	values map[string]string
}

func (l *ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	l.values[r.PathValue("id")] = string(body)
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (l *ledger) get(key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.values[key]
}

// TestStaleWriteIsRejectedEndToEnd is the story lockwatch exists for. Worker
// replica A holds the lease on invoice 42 and stalls: its Redis link goes
// dark, so its lease is lost and the key expires, while its handler, ignoring
// the cancellation, waits. Replica B takes the lease (a larger fence) and
// writes to the ledger through the fence guard. A wakes and writes too: the
// guard rejects A's stale token, B's value stands, the rejection is counted
// (with an exemplar) at the ledger and A's success after the loss is counted
// as a late completion at the worker.
func TestStaleWriteIsRejectedEndToEnd(t *testing.T) {
	srv := redistest.Start(t)
	worker := telemetrytest.New(t)
	resource := telemetrytest.New(t)

	// The ledger: a fence guard over a Redis fenced store, then the handler.
	// The ledger's key is the workers' lock key ("42" on both routes), in
	// the workers' lease namespace: the leases' tokens are minted for it.
	store := fence.NewRedisStore(srv.Client(t), "ledger", fence.RedisConfig{Telemetry: resource.Tel, LockNamespace: leaseNamespace(t)})
	book := &ledger{values: map[string]string{}}
	ledgerMux := http.NewServeMux()
	ledgerMux.Handle("PUT /ledger/{id}", NewGuard(store, GuardConfig{}).HTTP(pathKey)(book))
	ledgerURL, _ := serveHTTP(t, ledgerMux)
	downstream := &http.Client{Transport: RoundTripper(&http.Transport{})}
	t.Cleanup(downstream.CloseIdleConnections)
	// Runs in server handlers: failures are answers, never FailNow.
	writeLedger := func(ctx context.Context, id, value string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, ledgerURL+"/ledger/"+id, bytes.NewBufferString(value))
		if err != nil {
			return -1
		}
		resp, err := downstream.Do(req)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// Two worker replicas; A reaches Redis through a proxy the test can cut.
	proxy := faultproxy.Start(t, srv.Addr())
	aClient := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: 100 * time.Millisecond, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = aClient.Close() })
	ttl := 600 * time.Millisecond
	lockA := newLocker(t, aClient, worker.Tel, lease.Config{TTL: ttl, ReleaseTimeout: time.Second})
	lockB := newLocker(t, srv.Client(t), worker.Tel, lease.Config{TTL: ttl})

	aStarted, aLost, wake := make(chan int64, 1), make(chan struct{}), make(chan struct{})
	aWrite := make(chan int, 1)
	urlA, clientA := routeServer(t, lockA, func(w http.ResponseWriter, r *http.Request) {
		aStarted <- lease.FromContext(r.Context()).Fence()
		<-r.Context().Done() // the lease is lost...
		close(aLost)
		<-wake // ...but this handler does not care, and writes when it wakes
		aWrite <- writeLedger(context.WithoutCancel(r.Context()), "42", "written by A")
		w.WriteHeader(http.StatusOK)
	}, Config{})
	urlB, clientB := routeServer(t, lockB, func(w http.ResponseWriter, r *http.Request) {
		if code := writeLedger(r.Context(), "42", "written by B"); code != http.StatusNoContent {
			http.Error(w, fmt.Sprint("ledger answered ", code), http.StatusBadGateway)
			return
		}
		fmt.Fprint(w, lease.FromContext(r.Context()).Fence())
	}, Config{Lease: lease.Config{Wait: 10 * time.Second}})

	type answer struct {
		resp *http.Response
		err  error
	}
	aDone := make(chan answer, 1)
	go func() {
		resp, err := clientA.Post(urlA+"/reports/42", "text/plain", nil)
		aDone <- answer{resp, err}
	}()
	fenceA := <-aStarted
	proxy.Set(faultproxy.Blackhole) // A stalls
	select {
	case <-aLost:
	case <-time.After(10 * time.Second):
		t.Fatal("A's lease was not lost while its Redis link was dark")
	}

	respB := post(t, clientB, urlB+"/reports/42") // waits for A's key to expire
	bodyB, _ := io.ReadAll(respB.Body)
	require.Equal(t, http.StatusOK, respB.StatusCode, string(bodyB))
	var fenceB int64
	_, err := fmt.Sscan(string(bodyB), &fenceB)
	require.NoError(t, err, "B's response carries its fence")
	assert.Greater(t, fenceB, fenceA)
	assert.Equal(t, "written by B", book.get("42"))

	proxy.Set(faultproxy.Pass)
	close(wake) // A wakes and writes late
	assert.Equal(t, http.StatusConflict, <-aWrite, "the guard rejects A's stale token")
	var a answer
	select {
	case a = <-aDone:
	case <-time.After(10 * time.Second):
		t.Fatal("A never answered")
	}
	require.NoError(t, a.err)
	a.resp.Body.Close()
	assert.Equal(t, http.StatusOK, a.resp.StatusCode, "A believes it succeeded")

	assert.Equal(t, "written by B", book.get("42"), "B's value is intact")
	ledgerAttrs := telemetrytest.Attrs(obs.AttrResource, "ledger")
	assert.EqualValues(t, 1, resource.Sum(t, obs.FenceRejections, ledgerAttrs))
	assert.EqualValues(t, 1, resource.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, "ledger", obs.AttrResult, "rejected")))
	assert.EqualValues(t, 1, resource.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, "ledger", obs.AttrResult, "accepted")))
	worker.EventuallySum(t, obs.LeaseLateCompletions, telemetrytest.Attrs(obs.AttrLockName, "POST /reports/{id}"), 1)
}

package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

const exportsRoute = "POST /exports"

func exportsKey(*http.Request) string { return "exports" }

// gate is a handler's work that holds its request until the test lets it
// go, and notes how many run at once and the permit each holds.
type gate struct {
	entered      chan string   // the key of each entered request's lease
	release      chan struct{} // a receive lets one request return
	inside, most atomic.Int32
}

func newGate() *gate { return &gate{entered: make(chan string, 16), release: make(chan struct{})} }

func (g *gate) run(ctx context.Context) error {
	l := lease.FromContext(ctx)
	if l == nil {
		return errors.New("no lease in the handler's context")
	}
	n := g.inside.Add(1)
	defer g.inside.Add(-1) // before the middleware releases the permit
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	g.entered <- l.Key()
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (g *gate) http(w http.ResponseWriter, r *http.Request) {
	if err := g.run(r.Context()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, "done")
}

// permitServer serves the exports route behind lk with cfg.
func permitServer(t *testing.T, lk *lease.Locker, g *gate, cfg Config) (string, *http.Client) {
	mux := http.NewServeMux()
	mux.Handle(exportsRoute, HTTP(lk, exportsKey, cfg)(http.HandlerFunc(g.http)))
	url, c := serveHTTP(t, mux)
	return url + "/exports", c
}

// postAsync posts to url in the background; its status comes on the
// channel.
func postAsync(c *http.Client, url string) <-chan int {
	done := make(chan int, 1)
	go func() {
		resp, err := c.Post(url, "text/plain", nil)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	return done
}

// freePermits reports how many of key's first n permits lk can take at
// once, and gives them back.
func freePermits(t *testing.T, lk *lease.Locker, key string, n int) int {
	sem, err := permits.New(lk, key, permits.Config{Limit: n})
	require.NoError(t, err)
	var taken []*permits.Permit
	for range n {
		if p, err := sem.Acquire(testCtx(t)); err == nil {
			taken = append(taken, p)
		}
	}
	for _, p := range taken {
		_ = p.Release(testCtx(t))
	}
	return len(taken)
}

// TestHTTPPermitsBoundTheRoute: two replicas give the route 3 permits;
// three slow requests run at once, each holding a permit of its own, the
// fourth is refused PERMITS_SATURATED with a retry hint, and the permits
// are free again once the handlers returned.
func TestHTTPPermitsBoundTheRoute(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	g := newGate()
	var urls []string
	var clients []*http.Client
	var lk *lease.Locker
	for range 2 {
		lk = newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		u, c := permitServer(t, lk, g, Config{Permits: 3, Lease: lease.Config{Telemetry: h.Tel}})
		urls, clients = append(urls, u), append(clients, c)
	}
	var done []<-chan int
	held := map[string]bool{}
	for i := range 3 {
		done = append(done, postAsync(clients[i%2], urls[i%2]))
		held[<-g.entered] = true
	}
	assert.Equal(t, map[string]bool{"exports#0": true, "exports#1": true, "exports#2": true}, held,
		"each request's context carries a permit's lease of its own")

	resp := post(t, clients[1], urls[1])
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	p := decodeProblem(t, resp)
	assert.Equal(t, reasonSaturated, p.Reason)
	assert.Equal(t, exportsRoute, p.LockName)

	close(g.release)
	for _, d := range done {
		assert.Equal(t, http.StatusOK, <-d)
	}
	assert.EqualValues(t, 3, g.most.Load())
	require.Eventually(t, func() bool { return freePermits(t, lk, "exports", 3) == 3 },
		5*time.Second, 10*time.Millisecond, "the permits are released when the handlers return")
}

// TestHTTPPermitsWait: with Lease.Wait, a request that finds both permits
// held queues for them and runs once one holder's handler returns, never
// beside both.
func TestHTTPPermitsWait(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	g := newGate()
	lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
	url, c := permitServer(t, lk, g, Config{Permits: 2, Lease: lease.Config{Wait: 20 * time.Second, Telemetry: h.Tel}})
	var done []<-chan int
	for range 2 {
		done = append(done, postAsync(c, url))
		<-g.entered
	}
	third := postAsync(c, url)
	rc := srv.Client(t)
	require.Eventually(t, func() bool {
		for i := range 2 {
			if rc.LLen(testCtx(t), leasekeys.OfSlot(leaseNamespace(t), "exports", i).Queue).Val() != 1 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the third request queues on both permits")
	g.release <- struct{}{}
	<-g.entered
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, d := range append(done, third) {
		assert.Equal(t, http.StatusOK, <-d)
	}
	assert.EqualValues(t, 2, g.most.Load(), "never more requests at once than permits")
}

// TestHTTPPermitsUnanswered: a permit route whose Redis does not answer
// refuses with 503 and a retry hint, and its handler does not run.
func TestHTTPPermitsUnanswered(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	proxy := faultproxy.Start(t, srv.Addr())
	rc := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rc.Close() })
	lk := newLocker(t, rc, h.Tel, lease.Config{ReleaseTimeout: 200 * time.Millisecond})
	g := newGate()
	url, c := permitServer(t, lk, g, Config{Permits: 2, Lease: lease.Config{Telemetry: h.Tel}})
	proxy.Set(faultproxy.DropReplies)
	resp := post(t, c, url)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Contains(t, []string{reasonUnknown, reasonUnavailable}, decodeProblem(t, resp).Reason)
	assert.Zero(t, g.most.Load(), "the handler did not run")
	proxy.Set(faultproxy.Pass)
}

// TestGRPCPermits: a method with 2 permits runs two calls at once; the
// third is refused RESOURCE_EXHAUSTED PERMITS_SATURATED with RetryInfo,
// after the bounded wait.
func TestGRPCPermits(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	g := newGate()
	lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
	cfg := Config{Permits: 2, Lease: lease.Config{Wait: 300 * time.Millisecond, Telemetry: h.Tel}}
	client := lockedServer(t, lk, &health{check: g.run}, cfg)
	ctx := withLockKey(testCtx(t), "exports")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := client.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
			errs <- err
		}()
		<-g.entered
	}
	_, err := client.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	code, info, retry := details(t, err)
	assert.Equal(t, codes.ResourceExhausted, code)
	assert.Equal(t, reasonSaturated, info.GetReason())
	assert.Equal(t, checkMethod, info.GetMetadata()["lock_name"])
	if assert.NotNil(t, retry) {
		assert.Equal(t, time.Second, retry.GetRetryDelay().AsDuration())
	}
	close(g.release)
	for range 2 {
		require.NoError(t, <-errs)
	}
	assert.EqualValues(t, 2, g.most.Load())
	require.Eventually(t, func() bool { return freePermits(t, lk, "exports", 2) == 2 },
		5*time.Second, 10*time.Millisecond, "the permits are released when the handlers return")
}

// TestPermitsOutOfRangePanic: a limit no semaphore takes is refused when
// the middleware is made, as an invalid lease field is, not per request.
func TestPermitsOutOfRangePanic(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	lk := lease.NewLocker(client, lease.Config{Telemetry: telemetrytest.New(t).Tel})
	t.Cleanup(func() { _ = lk.Close() })
	for _, n := range []int{-1, permits.MaxLimit + 1} {
		assert.Panics(t, func() { HTTP(lk, exportsKey, Config{Permits: n}) }, "Permits %d", n)
		assert.Panics(t, func() { UnaryServerInterceptor(lk, unaryKey, Config{Permits: n}) }, "Permits %d", n)
	}
	assert.NotPanics(t, func() { HTTP(lk, exportsKey, Config{Permits: permits.MaxLimit}) })
}

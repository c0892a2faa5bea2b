package middleware

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

func pathKey(r *http.Request) string { return r.PathValue("id") }

// TestHTTPTwoReplicasExclusion: two replicas (two servers, two Lockers, one
// Redis) serve the same route; concurrent requests for one key never run
// together, and with a bounded wait all of them run.
func TestHTTPTwoReplicasExclusion(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	var inside, most atomic.Int32
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		inside.Add(-1)
		fmt.Fprint(w, lease.FromContext(r.Context()).Fence())
	})
	var urls []string
	var clients []*http.Client
	for range 2 {
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		mux := http.NewServeMux()
		mux.Handle("POST /reports/{id}", HTTP(lk, pathKey, Config{Lease: lease.Config{Wait: 10 * time.Second}})(work))
		u, c := serveHTTP(t, mux)
		urls, clients = append(urls, u), append(clients, c)
	}
	var wg sync.WaitGroup
	fences := make(chan int64, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := clients[i%2].Post(urls[i%2]+"/reports/42", "text/plain", nil)
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			f, _ := strconv.ParseInt(string(body), 10, 64)
			fences <- f
		}()
	}
	wg.Wait()
	close(fences)
	assert.EqualValues(t, 1, most.Load(), "two replicas ran the same key at once")
	seen := map[int64]bool{}
	for f := range fences {
		assert.False(t, seen[f], "fence %d handed out twice", f)
		seen[f] = true
	}
	assert.Len(t, seen, 20)
}

// routeServer serves one route wrapped in the middleware and returns its URL
// and client.
func routeServer(t *testing.T, lk *lease.Locker, handler http.HandlerFunc, cfg Config) (string, *http.Client) {
	mux := http.NewServeMux()
	mux.Handle("POST /reports/{id}", HTTP(lk, pathKey, cfg)(handler))
	return serveHTTP(t, mux)
}

func post(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := c.Post(url, "text/plain", nil)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestHTTPAnswers checks DESIGN's table case by case on a real server.
func TestHTTPAnswers(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)

	t.Run("contended: 409 with the holder's TTL", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{TTL: 5 * time.Second})
		holder, err := lk.Acquire(ctx, "42")
		require.NoError(t, err)
		defer holder.Release(ctx)
		var ran atomic.Bool
		url, c := routeServer(t, lk, func(http.ResponseWriter, *http.Request) { ran.Store(true) }, Config{})
		resp := post(t, c, url+"/reports/42")
		assert.Equal(t, http.StatusConflict, resp.StatusCode)
		retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err)
		assert.InDelta(t, 5, retry, 1)
		p := decodeProblem(t, resp)
		assert.Equal(t, reasonContended, p.Reason)
		assert.Equal(t, http.StatusConflict, p.Status)
		assert.Equal(t, "POST /reports/{id}", p.LockName, "the route, never the key, names the lock")
		assert.Equal(t, heldHereDetail, p.Detail, "the holder is a lease of this Locker")
		assert.False(t, ran.Load())
		assert.EqualValues(t, 1, h.Sum(t, obs.LeaseAcquires,
			telemetrytest.Attrs(obs.AttrLockName, "POST /reports/{id}", obs.AttrResult, "contended")))
	})

	t.Run("contended by another replica: the generic detail", func(t *testing.T) {
		lk := newLocker(t, srv.Client(t), nil, lease.Config{TTL: 5 * time.Second})
		other := newLocker(t, srv.Client(t), nil, lease.Config{TTL: 5 * time.Second})
		holder, err := other.Acquire(ctx, "43")
		require.NoError(t, err)
		defer holder.Release(ctx)
		url, c := routeServer(t, lk, func(http.ResponseWriter, *http.Request) {}, Config{})
		p := decodeProblem(t, post(t, c, url+"/reports/43"))
		assert.Equal(t, reasonContended, p.Reason)
		assert.Equal(t, "another replica is doing this work", p.Detail)
	})

	t.Run("contended by a named replica: the detail names it, never its token", func(t *testing.T) {
		lk := newLocker(t, srv.Client(t), nil, lease.Config{TTL: 5 * time.Second, Replica: "pod-b"})
		other := newLocker(t, srv.Client(t), nil, lease.Config{TTL: 5 * time.Second, Replica: "pod-a"})
		holder, err := other.Acquire(ctx, "44")
		require.NoError(t, err)
		defer holder.Release(ctx)
		token := srv.Client(t).Get(ctx, leasekeys.Of(leaseNamespace(t), "44").Lock).Val()
		random, _, found := strings.Cut(token, "@pod-a")
		require.True(t, found, "the lock holds the holder's token and replica: %q", token)
		url, c := routeServer(t, lk, func(http.ResponseWriter, *http.Request) {}, Config{})
		resp := post(t, c, url+"/reports/44")
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusConflict, resp.StatusCode)
		assert.Contains(t, string(body), `"detail":"replica pod-a is doing this work"`)
		assert.NotContains(t, string(body), random)
		assert.NotContains(t, fmt.Sprint(resp.Header), random)
	})

	t.Run("unknown: 503 and the handler does not run", func(t *testing.T) {
		h := telemetrytest.New(t)
		proxy := faultproxy.Start(t, srv.Addr())
		c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		lk := newLocker(t, c, h.Tel, lease.Config{ReleaseTimeout: 200 * time.Millisecond})
		var ran atomic.Bool
		url, client := routeServer(t, lk, func(http.ResponseWriter, *http.Request) { ran.Store(true) }, Config{})
		proxy.Set(faultproxy.DropReplies)
		resp := post(t, client, url+"/reports/42")
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		assert.Equal(t, reasonUnknown, decodeProblem(t, resp).Reason)
		assert.False(t, ran.Load())
		proxy.Set(faultproxy.Pass)
	})

	t.Run("lost before anything written: 503", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		causes := make(chan error, 1)
		url, c := routeServer(t, lk, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			causes <- context.Cause(r.Context())
		}, Config{Lease: lease.Config{MaxHold: 100 * time.Millisecond}})
		resp := post(t, c, url+"/reports/42")
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, reasonLost, decodeProblem(t, resp).Reason)
		require.ErrorIs(t, <-causes, lease.ErrLost, "the handler's context ends with the loss as its cause")
		assert.EqualValues(t, 0, h.Sum(t, obs.LeaseLateCompletions, telemetrytest.Attrs(obs.AttrLockName, "POST /reports/{id}")))
	})

	t.Run("success after loss: late completion", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		url, c := routeServer(t, lk, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			w.WriteHeader(http.StatusCreated) // ignores the loss
		}, Config{Lease: lease.Config{MaxHold: 100 * time.Millisecond}})
		resp := post(t, c, url+"/reports/42")
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.EqualValues(t, 1, h.Sum(t, obs.LeaseLateCompletions, telemetrytest.Attrs(obs.AttrLockName, "POST /reports/{id}")))
		waitCancellationLatency(t, h, "POST /reports/{id}")
	})

	t.Run("no key: no lock", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		mux := http.NewServeMux()
		got := make(chan *lease.Lease, 1)
		mux.Handle("GET /health", HTTP(lk, func(*http.Request) string { return "" }, Config{})(http.HandlerFunc(
			func(w http.ResponseWriter, r *http.Request) { got <- lease.FromContext(r.Context()) })))
		url, c := serveHTTP(t, mux)
		resp, err := c.Get(url + "/health")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Nil(t, <-got)
	})

	// The package doc's sentence: a handler sets the fence header itself.
	t.Run("fence header and the lease in the handler", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{})
		url, c := routeServer(t, lk, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Fencing-Token", lease.FromContext(r.Context()).Token().String())
			l := lease.FromContext(r.Context())
			_ = l.Commit(r.Context(), func(_ context.Context, token fence.Token) error {
				fmt.Fprint(w, token)
				return nil
			})
		}, Config{})
		resp := post(t, c, url+"/reports/42")
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.NotEmpty(t, body)
		assert.Equal(t, string(body), resp.Header.Get("Fencing-Token"))
		tok, err := fence.Parse(resp.Header.Get("Fencing-Token"))
		require.NoError(t, err, "the header is in the wire form")
		assert.Equal(t, fence.ScopeOf(leaseNamespace(t), "42"), tok.Scope, "minted for the route's key")
	})

	t.Run("panic releases the lease", func(t *testing.T) {
		h := telemetrytest.New(t)
		lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{TTL: time.Minute})
		url, c := routeServer(t, lk, func(http.ResponseWriter, *http.Request) { panic("boom") }, Config{})
		_, err := c.Post(url+"/reports/42", "text/plain", nil)
		require.Error(t, err, "net/http drops the connection of a panicking handler")
		h.EventuallySum(t, obs.LeaseReleases,
			telemetrytest.Attrs(obs.AttrLockName, "POST /reports/{id}", obs.AttrResult, "released"), 1)
		l, err := lk.Acquire(ctx, "42")
		require.NoError(t, err, "the key is free at once, not after the TTL")
		require.NoError(t, l.Release(ctx))
	})
}

// TestHTTPLeaseLostWhenRedisStalls: redis-server is SIGSTOPped while the
// handler runs. The handler's context is cancelled with the loss as cause,
// the client gets 503 LEASE_LOST, and the cancellation latency is recorded.
func TestHTTPLeaseLostWhenRedisStalls(t *testing.T) {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	c := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	lk := newLocker(t, c, h.Tel, lease.Config{TTL: time.Second, ReleaseTimeout: 200 * time.Millisecond})
	started := make(chan struct{})
	causes := make(chan error, 1)
	url, client := routeServer(t, lk, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		causes <- context.Cause(r.Context())
	}, Config{})
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := client.Post(url+"/reports/42", "text/plain", nil)
		done <- result{resp, err}
	}()
	<-started
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer while Redis is stalled")
	}
	require.NoError(t, r.err)
	defer r.resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, r.resp.StatusCode)
	assert.Equal(t, reasonLost, decodeProblem(t, r.resp).Reason)
	var lost *lease.LostError
	cause := <-causes
	require.ErrorAs(t, cause, &lost, "cause %v", cause)
	assert.Contains(t, []lease.LossReason{lease.LossRenewalUnknown, lease.LossDeadline}, lost.Reason)
	waitCancellationLatency(t, h, "POST /reports/{id}")
}

// TestHTTPLostAnswerDropsTheHandlersHeaders: the 503 for a lost lease does
// not inherit caching or framing headers the handler set before giving up.
func TestHTTPLostAnswerDropsTheHandlersHeaders(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), telemetrytest.New(t).Tel, lease.Config{})
	url, c := routeServer(t, lk, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("Content-Length", "2")
		w.Header().Set("Content-Encoding", "gzip")
		<-r.Context().Done()
	}, Config{Lease: lease.Config{MaxHold: 100 * time.Millisecond}})
	resp := post(t, c, url+"/reports/42")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Empty(t, resp.Header.Get("Content-Encoding"))
	assert.Equal(t, reasonLost, decodeProblem(t, resp).Reason, "the body decodes: no stale framing")
}

// TestHTTPHijack: handlers that assert http.Hijacker keep working.
func TestHTTPHijack(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), telemetrytest.New(t).Tel, lease.Config{})
	url, c := routeServer(t, lk, func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "not a Hijacker", http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		_ = buf.Flush()
	}, Config{})
	resp := post(t, c, url+"/reports/42")
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "hijacked", string(body))
}

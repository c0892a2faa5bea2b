package election_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// event is one step of an election as a test saw it: a callback ("started",
// "stopped") or a note of the test's own ("fn-end", ...).
type event struct {
	who    string
	kind   string
	fence  int64
	reason error
}

// harness is one election on a private redis-server: candidates with
// Clients and Lockers of their own, and one ordered log of what they did.
type harness struct {
	t   *testing.T
	srv *redistest.Server
	ns  string
	key string
	tel *telemetry.Telemetry // the Lockers' Telemetry; nil: the default

	mu  sync.Mutex
	log []event
}

var nsSeq atomic.Int64

func newHarness(t *testing.T) *harness {
	return &harness{t: t, srv: redistest.Start(t), ns: fmt.Sprintf("el%d", nsSeq.Add(1)), key: "singleton"}
}

// client returns a client of the harness's server whose deadlines bound
// socket reads, as the lease package asks of a lease client.
func (h *harness) client() *redis.Client {
	return h.srv.Client(h.t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
}

// locker returns a Locker of its own, closed when the test ends.
func (h *harness) locker(c redis.UniversalClient, ttl time.Duration) *lease.Locker {
	lk := lease.NewLocker(c, lease.Config{TTL: ttl, Namespace: h.ns, Telemetry: h.tel})
	h.t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// candidate returns an Election named who with its own client and Locker;
// its callbacks go to the log (after cfg's own, if any).
func (h *harness) candidate(who string, ttl time.Duration, cfg election.Config) *election.Election {
	c := h.client()
	if cfg.Identity == "" {
		cfg.Identity = who
	}
	if cfg.Pause == 0 {
		cfg.Pause = 20 * time.Millisecond
	}
	started, stopped := cfg.OnStartedLeading, cfg.OnStoppedLeading
	cfg.OnStartedLeading = func(t election.Term) {
		h.note(event{who: who, kind: "started", fence: t.Fence})
		if started != nil {
			started(t)
		}
	}
	cfg.OnStoppedLeading = func(t election.Term, reason error) {
		h.note(event{who: who, kind: "stopped", fence: t.Fence, reason: reason})
		if stopped != nil {
			stopped(t, reason)
		}
	}
	e, err := election.New(h.locker(c, ttl), h.key, cfg)
	require.NoError(h.t, err)
	return e
}

func (h *harness) note(ev event) {
	h.mu.Lock()
	h.log = append(h.log, ev)
	h.mu.Unlock()
}

func (h *harness) events() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.log...)
}

// waitFor waits until the log holds n events matching who and kind (who ""
// matches anyone) and returns them; within 0 does not wait.
func (h *harness) waitFor(who, kind string, n int, within time.Duration) []event {
	h.t.Helper()
	var got []event
	match := func() bool {
		got = got[:0]
		for _, ev := range h.events() {
			if (who == "" || ev.who == who) && ev.kind == kind {
				got = append(got, ev)
			}
		}
		return len(got) >= n
	}
	if !match() {
		require.Eventually(h.t, match, within, 2*time.Millisecond, "%d %q events of %q: %v", n, kind, who, h.events())
	}
	return got
}

// seen reports whether the log holds an event of who and kind. Unlike
// waitFor it may be called from a leader's function.
func (h *harness) seen(who, kind string) bool {
	for _, ev := range h.events() {
		if ev.who == who && ev.kind == kind {
			return true
		}
	}
	return false
}

// index returns the position in the log of the first event matching who,
// kind and fence, or -1.
func (h *harness) index(who, kind string, fence int64) int {
	for i, ev := range h.events() {
		if ev.who == who && ev.kind == kind && ev.fence == fence {
			return i
		}
	}
	return -1
}

// checkCallbacks asserts the callbacks' contract over the whole log: per
// candidate, started and stopped alternate, started first, each pair for
// one term; and terms start with strictly increasing fences.
func (h *harness) checkCallbacks() {
	h.t.Helper()
	open := map[string]int64{}
	var last int64
	for i, ev := range h.events() {
		switch ev.kind {
		case "started":
			_, leading := open[ev.who]
			require.False(h.t, leading, "event %d: %s started term %d while leading", i, ev.who, ev.fence)
			require.Greater(h.t, ev.fence, last, "event %d: term fences must increase", i)
			open[ev.who], last = ev.fence, ev.fence
		case "stopped":
			f, leading := open[ev.who]
			require.True(h.t, leading, "event %d: %s stopped without leading", i, ev.who)
			require.Equal(h.t, f, ev.fence, "event %d: %s stopped another term", i, ev.who)
			delete(open, ev.who)
		}
	}
}

// run starts e.Run on a goroutine and returns its result's channel; the
// test waits for it before ending (no goroutine outlives a test).
func run(t *testing.T, ctx context.Context, e *election.Election, fn func(context.Context, election.Term) error) <-chan error {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		done <- e.Run(ctx, fn)
	}()
	t.Cleanup(func() {
		cancel(errors.New("test over"))
		wg.Wait()
	})
	return done
}

// result waits for a Run's result.
func result(t *testing.T, done <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatalf("Run did not return within %v", within)
		return nil
	}
}

func testCtx(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, cancel
}

package election_test

// How each safety property could fail, and the test that tries it:
//
//   - Two leaders at once: a term resigned (released) before its function
//     returned, or a grant to two waiters. TestOneLeaderAtATime runs four
//     candidates with Lockers of their own through twelve terms and
//     counts leaders inside the functions.
//   - Terms not ordered: a fence reused or smaller after a hand-off.
//     checkCallbacks, after every test, wants strictly increasing fences.
//   - The next leader started before the last one's function returned:
//     TestFunctionAwaitedBeforeResign keeps a function running for three
//     TTLs after its context ended; the successor must start after it.
//   - A slow failover: the key left to expire instead of released.
//     TestResignHandsOverAtOnce uses a 20 s TTL and wants the successor
//     well within it.
//   - A loss not cancelling the work, or ending the candidate:
//     TestForcedLossIsLateAndCampaignsAgain takes the key by force,
//     TestStalledRedisLossCancelsBeforeExpiry stops Redis past the TTL;
//     the function's context must end with a *lease.LostError while the
//     key is still held (or Redis is still stopped), and the same Run
//     must lead again with a larger fence.
//   - A late completion unseen: the function returns after its key went
//     to another candidate; the reason and Run's error must say so.
//   - Callbacks out of order: stopped without started, twice for one
//     term, or before started (checkCallbacks).
//   - Observe naming the wrong leader: a record of an earlier term
//     (TestObserve writes one) must not name the leader.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
)

func TestOneLeaderAtATime(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	var leaders, most, terms atomic.Int64
	fn := func(ctx context.Context, term election.Term) error {
		n := leaders.Add(1)
		defer leaders.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		terms.Add(1)
		// Work that does not watch ctx: a term released before fn returned would
		// let the next leader in meanwhile.
		time.Sleep(30 * time.Millisecond)
		return nil
	}
	const candidates, rounds = 4, 3
	var dones []<-chan error
	for i := range candidates {
		e := h.candidate(string(rune('a'+i)), 2*time.Second, election.Config{})
		done := make(chan error, 1)
		dones = append(dones, done)
		go func() {
			for range rounds {
				if err := e.Run(ctx, fn); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for _, done := range dones {
		require.NoError(t, result(t, done, 25*time.Second))
	}
	assert.Equal(t, int64(1), most.Load(), "most leaders at once")
	assert.Equal(t, int64(candidates*rounds), terms.Load())
	assert.Len(t, h.waitFor("", "stopped", candidates*rounds, time.Second), candidates*rounds)
	h.checkCallbacks()
	for _, ev := range h.events() {
		if ev.kind == "stopped" {
			require.ErrorIs(t, ev.reason, election.ErrResigned)
			require.NotErrorIs(t, ev.reason, election.ErrLateCompletion)
		}
	}
}

func TestResignHandsOverAtOnce(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	const ttl = 20 * time.Second
	a, b := h.candidate("a", ttl, election.Config{}), h.candidate("b", ttl, election.Config{})
	resign := make(chan struct{})
	doneA := run(t, ctx, a, func(ctx context.Context, _ election.Term) error {
		select {
		case <-resign:
		case <-ctx.Done():
		}
		return nil
	})
	h.waitFor("a", "started", 1, 5*time.Second)
	doneB := run(t, ctx, b, func(ctx context.Context, _ election.Term) error { return nil })
	close(resign)
	require.NoError(t, result(t, doneA, 5*time.Second))
	// Within a quarter of the TTL: the key was handed over, not left to
	// expire.
	require.NoError(t, result(t, doneB, ttl/4))
	h.checkCallbacks()
	assert.Less(t, h.index("a", "stopped", h.waitFor("a", "stopped", 1, 0)[0].fence),
		h.index("b", "started", h.waitFor("b", "started", 1, 0)[0].fence))
}

func TestFunctionAwaitedBeforeResign(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	const ttl = 300 * time.Millisecond
	a, b := h.candidate("a", ttl, election.Config{}), h.candidate("b", ttl, election.Config{})
	ctxA, cancelA := context.WithCancel(ctx)
	doneA := run(t, ctxA, a, func(ctx context.Context, term election.Term) error {
		<-ctx.Done()
		time.Sleep(3 * ttl) // the lease stays held, renewed, while fn runs
		h.note(event{who: "a", kind: "fn-end", fence: term.Fence})
		return ctx.Err()
	})
	termA := h.waitFor("a", "started", 1, 5*time.Second)[0].fence
	doneB := run(t, ctx, b, func(ctx context.Context, _ election.Term) error { return nil })
	cancelA()
	err := result(t, doneA, 10*time.Second)
	require.ErrorIs(t, err, context.Canceled, "Run returns its context's cause")
	require.NotErrorIs(t, err, election.ErrLateCompletion)
	require.NoError(t, result(t, doneB, 10*time.Second))
	h.checkCallbacks()
	termB := h.waitFor("b", "started", 1, 0)[0].fence
	assert.Less(t, h.index("a", "fn-end", termA), h.index("b", "started", termB),
		"b led before a's function returned: %v", h.events())
	stopped := h.waitFor("a", "stopped", 1, 0)[0]
	assert.ErrorIs(t, stopped.reason, context.Canceled)
}

func TestForcedLossIsLateAndCampaignsAgain(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	const ttl = 600 * time.Millisecond
	a, b := h.candidate("a", ttl, election.Config{}), h.candidate("b", ttl, election.Config{})
	var aTerms atomic.Int64
	causes := make(chan error, 1)
	doneA := run(t, ctx, a, func(ctx context.Context, term election.Term) error {
		if aTerms.Add(1) > 1 {
			return nil // the second term: Run returns
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		for i := 0; i < 1000 && !h.seen("b", "started"); i++ {
			time.Sleep(5 * time.Millisecond) // return late on purpose
		}
		return context.Cause(ctx)
	})
	first := h.waitFor("a", "started", 1, 5*time.Second)[0].fence
	releaseB := make(chan struct{})
	doneB := run(t, ctx, b, func(ctx context.Context, _ election.Term) error {
		select {
		case <-releaseB:
		case <-ctx.Done():
		}
		return nil
	})
	admin := h.locker(h.client(), ttl)
	info, err := admin.Inspect(ctx, h.key)
	require.NoError(t, err)
	_, err = admin.ForceRelease(ctx, h.key, info.Holder)
	require.NoError(t, err)

	var lost *lease.LostError
	require.ErrorAs(t, <-causes, &lost)
	assert.Equal(t, lease.LossForceReleased, lost.Reason)
	stopped := h.waitFor("a", "stopped", 1, 5*time.Second)[0]
	require.ErrorIs(t, stopped.reason, election.ErrLateCompletion)
	require.ErrorAs(t, stopped.reason, &lost)
	close(releaseB)
	require.NoError(t, result(t, doneB, 5*time.Second))
	require.NoError(t, result(t, doneA, 5*time.Second), "a led again in the same Run")
	h.checkCallbacks()
	again := h.waitFor("a", "started", 2, 0)[1].fence
	assert.Greater(t, again, first)
}

func TestLateCompletionEndsRunWithFunctionError(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	// A long TTL: the next renewal, which would notice the force, comes after
	// fn has returned.
	a := h.candidate("a", 30*time.Second, election.Config{})
	forced := make(chan struct{})
	boom := errors.New("boom")
	done := run(t, ctx, a, func(ctx context.Context, _ election.Term) error {
		select {
		case <-forced:
		case <-ctx.Done():
		}
		return boom
	})
	h.waitFor("a", "started", 1, 5*time.Second)
	admin := h.locker(h.client(), time.Second)
	info, err := admin.Inspect(ctx, h.key)
	require.NoError(t, err)
	_, err = admin.ForceRelease(ctx, h.key, info.Holder)
	require.NoError(t, err)
	close(forced)
	err = result(t, done, 5*time.Second)
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, election.ErrLateCompletion)
	stopped := h.waitFor("a", "stopped", 1, 0)[0]
	require.ErrorIs(t, stopped.reason, election.ErrResigned)
	require.ErrorIs(t, stopped.reason, election.ErrLateCompletion)
	require.ErrorIs(t, stopped.reason, boom)
	h.checkCallbacks()
}

func TestStalledRedisLossCancelsBeforeExpiry(t *testing.T) {
	for _, overrun := range []bool{false, true} {
		t.Run(map[bool]string{false: "stops in time", true: "overruns"}[overrun], func(t *testing.T) {
			testStalledRedisLoss(t, overrun)
		})
	}
}

// testStalledRedisLoss stops Redis under a leader. The term's context ends
// while Redis is still stopped, so its release cannot be answered: a
// function that returns at once (within the safety margin) is no late
// completion, one that returns after its key may have expired
// (KeyHeldUntil) is. Either way the same Run leads again once Redis is
// back.
func testStalledRedisLoss(t *testing.T, overrun bool) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	const ttl = 500 * time.Millisecond
	a := h.candidate("a", ttl, election.Config{})
	type ended struct {
		cause error
		l     *lease.Lease
		term  election.Term
	}
	ends := make(chan ended, 1)
	var terms atomic.Int64
	done := run(t, ctx, a, func(ctx context.Context, term election.Term) error {
		if terms.Add(1) > 1 {
			return nil
		}
		<-ctx.Done()
		var lost *lease.LostError
		if overrun && errors.As(context.Cause(ctx), &lost) {
			time.Sleep(time.Until(lost.KeyHeldUntil) + 50*time.Millisecond)
		}
		ends <- ended{context.Cause(ctx), lease.FromContext(ctx), term}
		return nil
	})
	first := h.waitFor("a", "started", 1, 5*time.Second)[0].fence
	require.NoError(t, h.srv.Pause())
	var end ended
	select {
	case end = <-ends: // Redis is still stopped: nobody can have taken the key
	case <-time.After(10 * time.Second):
		t.Fatal("the term's context outlived a stopped Redis")
	}
	var lost *lease.LostError
	require.ErrorAs(t, end.cause, &lost)
	require.False(t, lost.KeyHeldUntil.IsZero(), "a stall leaves the key in Redis for the safety margin")
	require.NotNil(t, end.l, "fn runs on the term's lease context")
	assert.Equal(t, end.term.Fence, end.l.Fence())
	stopped := h.waitFor("a", "stopped", 1, 5*time.Second)[0]
	require.NoError(t, h.srv.Resume())
	require.ErrorAs(t, stopped.reason, &lost)
	if overrun {
		require.ErrorIs(t, stopped.reason, election.ErrLateCompletion, "returned after the key may have expired")
	} else {
		require.NotErrorIs(t, stopped.reason, election.ErrLateCompletion, "stopped within the safety margin")
	}
	require.NoError(t, result(t, done, 10*time.Second), "a led again in the same Run")
	h.checkCallbacks()
	assert.Greater(t, h.waitFor("a", "started", 2, 0)[1].fence, first)
}

func TestObserve(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	a := h.candidate("alpha", 5*time.Second, election.Config{})
	watcher := h.candidate("watcher", 5*time.Second, election.Config{})
	_, err := watcher.Observe(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)

	resign := make(chan struct{})
	done := run(t, ctx, a, func(ctx context.Context, term election.Term) error {
		got, ok := a.Leading()
		assert.True(t, ok)
		assert.Equal(t, term, got)
		select {
		case <-resign:
		case <-ctx.Done():
		}
		return nil
	})
	term := h.waitFor("alpha", "started", 1, 5*time.Second)[0].fence
	got, err := watcher.Observe(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.Leader{Term: term, Identity: "alpha"}, got)

	// A record of an earlier term (a deposed leader's) names nobody.
	c := h.client()
	keys, err := c.Keys(ctx, h.ns+":{*}:n").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.NoError(t, c.Set(ctx, keys[0], "1 0 mallory", 0).Err())
	got, err = watcher.Observe(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.Leader{Term: term}, got)

	close(resign)
	require.NoError(t, result(t, done, 5*time.Second))
	_, ok := a.Leading()
	assert.False(t, ok)
	_, err = watcher.Observe(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "Run resigned")
	h.checkCallbacks()
}

// Ready: 503 before a term, 200 with the term while leading, 503 again
// once the term ended.
func TestReady(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	a := h.candidate("a", 5*time.Second, election.Config{})
	probe := func() (int, string) {
		w := httptest.NewRecorder()
		a.Ready(w, httptest.NewRequest(http.MethodGet, "/ready", nil))
		assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
		return w.Code, w.Body.String()
	}
	code, body := probe()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "not leading\n", body)

	resign := make(chan struct{})
	done := run(t, ctx, a, func(context.Context, election.Term) error {
		<-resign
		return nil
	})
	term := h.waitFor("a", "started", 1, 5*time.Second)[0].fence
	code, body = probe()
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "leading term "+strconv.FormatInt(term, 10)+"\n", body)
	close(resign)
	require.NoError(t, result(t, done, 5*time.Second))
	code, _ = probe()
	assert.Equal(t, http.StatusServiceUnavailable, code)
}

package lease

import (
	"context"
	"crypto/rand"
	"errors"
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
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// TestBehaviour runs every protocol claim that needs no fault injection
// against a single redis-server and a 3-master Redis Cluster.
func TestBehaviour(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, c redis.UniversalClient)
	}{
		{"AcquireIsOneRoundTrip", testAcquireIsOneRoundTrip},
		{"ContendedReturnsHolderTTL", testContendedReturnsHolderTTL},
		{"RetriedAcquireIsIdempotent", testRetriedAcquireIsIdempotent},
		{"LateCopyOfAnUnknownAcquireIsBarred", testLateUnknownAcquireIsBarred},
		{"FenceIncreasesAcrossReleases", testFenceIncreasesAcrossReleases},
		{"FenceIncreasesAcrossExpiry", testFenceIncreasesAcrossExpiry},
		{"ExclusionAndFenceOrderUnderContention", testExclusionAndFenceOrder},
		{"RenewalKeepsLeaseForManyTTLs", testRenewalKeepsLease},
		{"RenewalsAreBatched", testRenewalsAreBatched},
		{"DeletedKeyIsLostAtNextRenewal", testDeletedKeyIsLost},
		{"OverwrittenKeyIsLostAndNotReleased", testOverwrittenKeyIsLost},
		{"MaxHold", testMaxHold},
		{"MaxHoldLeaseDoesNotShortenItsBatch", testMaxHoldLeaseDoesNotShortenItsBatch},
		{"RenewalKeepsTheFenceRecord", testRenewalKeepsTheFenceRecord},
		{"Commit", testCommit},
		{"Release", testRelease},
		{"WaitWithBackoff", testWaitWithBackoff},
		{"CallerBracesDoNotChooseTheSlot", testCallerBracesDoNotChooseSlot},
		{"LongAndBinaryKeys", testLongAndBinaryKeys},
		{"NamespacesAreIndependent", testNamespacesAreIndependent},
		// An operator's view of a key and their last resort (admin_test.go).
		{"InspectShowsAHeldKeyWithoutItsToken", testInspectShowsAHeldKey},
		{"InspectOfAFreeKey", testInspectOfAFreeKey},
		{"ForceReleaseLosesTheHolderAndBarsIt", testForceReleaseLosesTheHolder},
		{"ForceReleaseOfAFreeKeyChangesNothing", testForceReleaseOfAFreeKey},
		{"ForceReleaseSparesAnotherHolder", testForceReleaseSparesAnotherHolder},
		{"ForceReleaseWakesAWaiter", testForceReleaseWakesAWaiter},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, b.client(t)) })
			}
		})
	}
}

func testAcquireIsOneRoundTrip(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{})
	// The first use of a script on a node answers NOSCRIPT and falls back to
	// EVAL: at most two commands, once per node and script.
	cold := &cmdCounter{}
	c.AddHook(cold)
	warm, err := lk.Acquire(ctx, "warm-up")
	require.NoError(t, err)
	assert.LessOrEqual(t, cold.cmds.Load(), int64(2))
	require.NoError(t, warm.Release(ctx))
	require.NoError(t, c.ScriptLoad(ctx, acquireScript.Source()).Err()) // every node, on Cluster

	counter := &cmdCounter{}
	c.AddHook(counter)
	l, err := lk.Acquire(ctx, "one-trip")
	require.NoError(t, err)
	assert.EqualValues(t, 1, counter.cmds.Load(), "acquire and fence minting must be one command")
	assert.Positive(t, l.Fence())
	assert.Less(t, l.Fence(), int64(1)<<53, "fence must be exact in a float64 (JSON)")
	require.NoError(t, l.Release(ctx))
}

func testContendedReturnsHolderTTL(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	o, tel := observe(t)
	lk := newLocker(t, c, Config{TTL: 5 * time.Second, Telemetry: tel})
	l, err := lk.Acquire(ctx, "busy")
	require.NoError(t, err)
	defer l.Release(ctx)

	_, err = lk.Acquire(ctx, "busy")
	require.ErrorIs(t, err, ErrNotAcquired)
	var na *NotAcquiredError
	require.ErrorAs(t, err, &na)
	assert.Greater(t, na.HolderTTL, 3*time.Second)
	assert.LessOrEqual(t, na.HolderTTL, 5*time.Second)
	spans := o.acquires()
	require.Len(t, spans, 2)
	assert.Equal(t, string(obs.AcquireAcquired), telemetrytest.Attr(spans[0], obs.AttrResult).AsString())
	assert.Equal(t, l.Fence(), telemetrytest.Attr(spans[0], obs.AttrFence).AsInt64())
	assert.Equal(t, string(obs.AcquireContended), telemetrytest.Attr(spans[1], obs.AttrResult).AsString())
}

func testRetriedAcquireIsIdempotent(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{})
	lockKey, fenceKey := redisKeys(lk.set.Namespace, "retry")
	// Two sends with one owner token, as when go-redis retries a script
	// whose reply was lost: the same fence, one lock.
	first := lk.attempt(ctx, lk.set, lockKey, attemptOf(lk.set, "retry", "owner-a").call())
	require.NoError(t, first.err)
	require.True(t, first.acquired)
	again := lk.attempt(ctx, lk.set, lockKey, attemptOf(lk.set, "retry", "owner-a").call())
	require.NoError(t, again.err)
	assert.True(t, again.acquired)
	assert.Equal(t, first.fence, again.fence)
	assert.Equal(t, "owner-a", c.Get(ctx, lockKey).Val())

	other := lk.attempt(ctx, lk.set, lockKey, attemptOf(lk.set, "retry", "owner-b").call())
	require.NoError(t, other.err)
	assert.False(t, other.acquired)
	fence, err := recordFence(ctx, c, fenceKey)
	require.NoError(t, err)
	assert.Equal(t, first.fence, fence, "a contended attempt mints nothing")
	assert.Contains(t, c.Get(ctx, fenceKey).Val(), "~owner-b", "the answered attempt is barred")
}

// testLateUnknownAcquireIsBarred sends an acquire after the clean-up of its
// unknown result, as a stalled server may serve them: the late acquire must
// not take the key, also after other leases came and went, and the list of
// barred tokens stays bounded.
func testLateUnknownAcquireIsBarred(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{})
	set := lk.set
	lockKey, fenceKey := redisKeys(set.Namespace, "late")
	acquire := func(owner string) attemptResult {
		t.Helper()
		r := lk.attempt(ctx, set, lockKey, attemptOf(set, "late", owner).call())
		require.NoError(t, r.err)
		return r
	}
	resolve := func(owner string) int64 {
		t.Helper()
		n, err := lk.releaseKey(ctx, set, lockKey, attemptOf(set, "late", owner).release().call())
		require.NoError(t, err)
		return n
	}

	late := rand.Text()
	assert.Zero(t, resolve(late), "nothing to release: the acquire has not run")
	assert.False(t, acquire(late).acquired, "the late acquire ran after its clean-up")
	assert.Zero(t, c.Exists(ctx, lockKey).Val())

	// Leases come and go; the bar stays, and the fence still increases.
	var fences []int64
	for range 2 {
		l, err := lk.Acquire(ctx, "late")
		require.NoError(t, err)
		fences = append(fences, l.Fence())
		require.NoError(t, l.Release(ctx))
		assert.False(t, acquire(late).acquired, "a new fence lifted the bar")
	}
	assert.Greater(t, fences[1], fences[0])

	// A retried acquire reads its fence from a record that lists barred tokens.
	owner := rand.Text()
	first := acquire(owner)
	require.True(t, first.acquired)
	again := acquire(owner)
	assert.True(t, again.acquired)
	assert.Equal(t, first.fence, again.fence)
	// A clean-up of an acquire that did run releases it, and bars a retry of
	// it still on its way.
	assert.EqualValues(t, 1, resolve(owner))
	assert.Zero(t, c.Exists(ctx, lockKey).Val())
	assert.False(t, acquire(owner).acquired, "a retry of the released acquire took the key again")

	// Only the 16 newest barred tokens are kept.
	newest := make([]string, 20) // with owner and late: 22 barred
	for i := range newest {
		newest[i] = rand.Text()
		resolve(newest[i])
	}
	rec := c.Get(ctx, fenceKey).Val()
	assert.Equal(t, 16, endedBars(rec), "record %q", rec)
	assert.NotContains(t, rec, late)
	// A retried clean-up takes no second place.
	resolve(newest[19])
	assert.Equal(t, rec, c.Get(ctx, fenceKey).Val())
	assert.False(t, acquire(newest[19]).acquired)
	assert.False(t, acquire(newest[4]).acquired)
	assert.True(t, acquire(newest[3]).acquired, "the 17th newest token is no longer listed")

	// A token is barred whole: one that begins like a barred token is not.
	// A bar already listed moves to the front and takes no second place.
	assert.EqualValues(t, 1, resolve(newest[3]))
	resolve("barred-token")
	assert.True(t, acquire("barred-tok").acquired, "a prefix of a barred token is not barred")
	resolve("barred-tok")
	resolve(newest[10])
	rec = c.Get(ctx, fenceKey).Val()
	assert.Regexp(t, `^\d*/`+newest[10]+`[/+!~]`, rec, "a re-barred token moves to the front")
	assert.Equal(t, 1, strings.Count(rec, newest[10]), "record %q", rec)
	assert.Equal(t, 16, endedBars(rec), "record %q", rec)
	assert.False(t, acquire("barred-token").acquired)
	assert.Zero(t, c.Exists(ctx, lockKey).Val())

	// On a key with no fence record the clean-up writes no fence: the
	// record still tells a lock that has none.
	freshLock, freshFence := redisKeys(set.Namespace, "late-fresh")
	tok := rand.Text()
	n, err := lk.releaseKey(ctx, set, freshLock, attemptOf(set, "late-fresh", tok).release().call())
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, "/"+tok, c.Get(ctx, freshFence).Val())
}

func testFenceIncreasesAcrossReleases(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	acquireReleaseN(ctx, t, newLocker(t, c, Config{}), "seq", 20)
}

func testFenceIncreasesAcrossExpiry(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	// A short TTL, and a round trip allowed to take longer than TTL/5 on a
	// loaded machine.
	lk := newLocker(t, c, Config{TTL: 50 * time.Millisecond, AcquireTimeout: 5 * time.Second})
	lockKey, _ := redisKeys(lk.set.Namespace, "expiry")
	first := lk.attempt(ctx, lk.set, lockKey, attemptOf(lk.set, "expiry", "owner-a").call())
	require.NoError(t, first.err)
	require.True(t, first.acquired)
	require.Eventually(t, func() bool { return c.Exists(ctx, lockKey).Val() == 0 },
		5*time.Second, 5*time.Millisecond, "lock key never expired")
	second := lk.attempt(ctx, lk.set, lockKey, attemptOf(lk.set, "expiry", "owner-b").call())
	require.NoError(t, second.err)
	require.True(t, second.acquired)
	assert.Greater(t, second.fence, first.fence)
}

// testExclusionAndFenceOrder lets 8 workers contend for one key: at most one
// holds it at a time, and the fences, in the order the holds happened, are
// strictly increasing.
func testExclusionAndFenceOrder(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{TTL: 2 * time.Second, Wait: 10 * time.Second, BackoffMin: time.Millisecond, BackoffMax: 20 * time.Millisecond})
	var (
		inside atomic.Int32
		mu     sync.Mutex
		fences []int64
		wg     sync.WaitGroup
		errs   = make(chan error, 64)
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				l, err := lk.Acquire(ctx, "shared")
				if err != nil {
					errs <- err
					return
				}
				if n := inside.Add(1); n != 1 {
					errs <- errors.New("two holders at once")
				}
				mu.Lock()
				fences = append(fences, l.Fence())
				mu.Unlock()
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, fences, 40)
	for i := 1; i < len(fences); i++ {
		require.Greater(t, fences[i], fences[i-1], "fence order must follow hold order")
	}
}

func testRenewalKeepsLease(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	o, tel := observe(t)
	ttl := 500 * time.Millisecond
	lk := newLocker(t, c, Config{TTL: ttl, Telemetry: tel})
	l, err := lk.Acquire(ctx, "long")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "long")

	deadline := time.Now().Add(6 * ttl)
	for time.Now().Before(deadline) {
		require.NoError(t, l.Err(), "lease lost while Redis is healthy")
		require.Positive(t, c.PTTL(ctx, lockKey).Val(), "key must stay in Redis")
		time.Sleep(ttl / 6)
	}
	require.NoError(t, l.Context().Err())
	assert.Positive(t, l.Remaining())
	renewals := o.renewals(t)
	assert.GreaterOrEqual(t, renewals[obs.RenewalRenewed], int64(10), "renewal every TTL/3 over 6 TTLs")
	assert.Equal(t, map[obs.RenewalResult]int64{obs.RenewalRenewed: renewals[obs.RenewalRenewed], obs.RenewalRejected: 0,
		obs.RenewalUnknown: 0}, renewals, "every renewal renewed")
	require.NoError(t, l.Release(ctx))
}

func testRenewalsAreBatched(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	o, tel := observe(t)
	const n = 200
	lk := newLocker(t, c, Config{TTL: 600 * time.Millisecond, Telemetry: tel})
	counter := &cmdCounter{}
	c.AddHook(counter)
	var biggest atomic.Int64 // the most renewals in one pipeline: one batch
	c.AddHook(hookFunc(func(cmds []redis.Cmder, send func() error) error {
		if renewScript.Runs(cmds[0]) && int64(len(cmds)) > biggest.Load() {
			biggest.Store(int64(len(cmds)))
		}
		return send()
	}))
	before := counter.pipelines.Load()
	leases := make([]*Lease, n)
	for i := range leases {
		l, err := lk.Acquire(ctx, "batch-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)))
		require.NoError(t, err)
		leases[i] = l
	}
	require.Eventually(t, func() bool {
		var done int64
		for _, k := range o.renewals(t) {
			done += k
		}
		return done >= 3*n
	}, 10*time.Second, 10*time.Millisecond, "three renewal rounds")

	counted := o.renewals(t)
	require.Equal(t, map[obs.RenewalResult]int64{obs.RenewalRenewed: counted[obs.RenewalRenewed], obs.RenewalRejected: 0,
		obs.RenewalUnknown: 0}, counted, "every renewal renewed")
	assert.Greater(t, biggest.Load(), int64(n/4), "renewals of leases taken together share a pipeline")
	renewals := int(counted[obs.RenewalRenewed])
	// Cluster splits one batch into one pipeline per master, so allow a
	// few pipelines per batch; one pipeline per renewal would be n times more.
	pipelines := counter.pipelines.Load() - before
	assert.Less(t, pipelines, int64(renewals/10), "pipelines %d for %d renewals", pipelines, renewals)
	for _, l := range leases {
		require.NoError(t, l.Err())
		require.NoError(t, l.Release(ctx))
	}
}

func testDeletedKeyIsLost(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	o, tel := observe(t)
	lk := newLocker(t, c, Config{TTL: 300 * time.Millisecond, Telemetry: tel})
	l, err := lk.Acquire(ctx, "deleted")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "deleted")
	require.EqualValues(t, 1, c.Del(ctx, lockKey).Val())

	cause := waitDone(t, l, 5*time.Second)
	assert.Equal(t, LossRenewalRejected, lossReason(t, cause))
	assert.Zero(t, l.Remaining())
	losses := o.waitLosses(t, 1)
	require.Len(t, losses, 1)
	assert.Equal(t, string(LossRenewalRejected), losses[0].Attrs[obs.AttrReason])
	assert.Equal(t, strconv.FormatInt(l.Fence(), 10), losses[0].Attrs[obs.AttrFence])
	require.ErrorIs(t, l.Release(ctx), ErrNotHeld)
}

func testOverwrittenKeyIsLost(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{TTL: 300 * time.Millisecond})
	l, err := lk.Acquire(ctx, "overwritten")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "overwritten")
	require.NoError(t, c.Set(ctx, lockKey, "someone-else", time.Minute).Err())

	cause := waitDone(t, l, 5*time.Second)
	assert.Equal(t, LossRenewalRejected, lossReason(t, cause))
	require.ErrorIs(t, l.Release(ctx), ErrNotHeld)
	assert.Equal(t, "someone-else", c.Get(ctx, lockKey).Val(), "release must never delete another holder's lock")
}

func testMaxHold(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	o, tel := observe(t)
	lk := newLocker(t, c, Config{TTL: time.Second, MaxHold: 250 * time.Millisecond, Telemetry: tel})
	l, err := lk.Acquire(ctx, "bounded")
	require.NoError(t, err)
	cause := waitDone(t, l, 5*time.Second)
	assert.Equal(t, LossMaxHold, lossReason(t, cause))
	losses := o.waitLosses(t, 1)
	require.Len(t, losses, 1)
	assert.GreaterOrEqual(t, l.lostAt-l.sentAt, 250*time.Millisecond, "held until the loss")
	assert.Equal(t, map[obs.RenewalResult]int64{obs.RenewalRenewed: 0, obs.RenewalRejected: 0, obs.RenewalUnknown: 0},
		o.renewals(t), "no renewal is sent past the max hold")
	require.NoError(t, l.Release(ctx), "the key is still ours: max hold ends the lease, not the key")
}

func testCommit(t *testing.T, c redis.UniversalClient) {
	o, tel := observe(t)
	ctx, work := o.Tracer.Start(testCtx(t), "work") // where each Commit is marked
	ttl := time.Second
	lk := newLocker(t, c, Config{TTL: ttl, Telemetry: tel})

	t.Run("runs with the fence", func(t *testing.T) {
		l, err := lk.Acquire(ctx, "commit-ok")
		require.NoError(t, err)
		defer l.Release(ctx)
		var got fence.Token
		require.NoError(t, l.Commit(ctx, func(_ context.Context, token fence.Token) error { got = token; return nil }))
		assert.Equal(t, l.Token(), got, "fn gets the lease's token")
		assert.Equal(t, l.Fence(), got.Fence)
		wantErr := errors.New("write failed")
		require.ErrorIs(t, l.Commit(ctx, func(context.Context, fence.Token) error { return wantErr }), wantErr)
	})
	t.Run("near expiry runs and is counted", func(t *testing.T) {
		l, err := with(t, lk, Config{CommitHard: -1, CommitWarn: ttl}).Acquire(ctx, "commit-near")
		require.NoError(t, err)
		defer l.Release(ctx)
		ran := false
		require.NoError(t, l.Commit(ctx, func(context.Context, fence.Token) error { ran = true; return nil }))
		assert.True(t, ran)
	})
	t.Run("below the hard margin refuses", func(t *testing.T) {
		l, err := with(t, lk, Config{CommitHard: ttl, CommitWarn: ttl}).Acquire(ctx, "commit-hard")
		require.NoError(t, err)
		defer l.Release(ctx)
		err = l.Commit(ctx, func(context.Context, fence.Token) error { t.Fatal("fn ran below the hard margin"); return nil })
		require.ErrorIs(t, err, ErrExpiring)
	})
	t.Run("after loss refuses", func(t *testing.T) {
		l, err := lk.Acquire(ctx, "commit-lost")
		require.NoError(t, err)
		lockKey, _ := redisKeys(lk.set.Namespace, "commit-lost")
		c.Del(ctx, lockKey)
		_ = waitDone(t, l, 5*time.Second)
		err = l.Commit(ctx, func(context.Context, fence.Token) error { t.Fatal("fn ran after loss"); return nil })
		require.ErrorIs(t, err, ErrLost)
		_ = l.Release(ctx)
		err = l.Commit(ctx, func(context.Context, fence.Token) error { t.Fatal("fn ran after release"); return nil })
		require.ErrorIs(t, err, ErrLost, "a lost lease stays lost after Release")
	})
	t.Run("after release refuses", func(t *testing.T) {
		l, err := lk.Acquire(ctx, "commit-released")
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		err = l.Commit(ctx, func(context.Context, fence.Token) error { t.Fatal("fn ran after release"); return nil })
		require.ErrorIs(t, err, ErrReleased)
	})
	outcomes := map[obs.CommitResult]int{}
	for _, e := range telemetrytest.SpanEvents(work, obs.EventCommit) {
		result := obs.CommitResult(e[obs.AttrResult].AsString())
		outcomes[result]++
		if result != obs.CommitRefused {
			assert.Positive(t, e[obs.AttrRemaining].AsFloat64())
		}
	}
	assert.Equal(t, map[obs.CommitResult]int{obs.CommitCommitted: 1, obs.CommitFailed: 1, obs.CommitNearExpiry: 1, obs.CommitRefused: 4}, outcomes)
}

func testRelease(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	o, tel := observe(t)
	lk := newLocker(t, c, Config{Telemetry: tel})
	lockKey, _ := redisKeys(lk.set.Namespace, "rel")

	l, err := lk.Acquire(ctx, "rel")
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, l.Release(cancelled), "release runs on a detached context")
	assert.EqualValues(t, 0, c.Exists(ctx, lockKey).Val())
	require.ErrorIs(t, context.Cause(l.Context()), ErrReleased)
	require.ErrorIs(t, l.Err(), ErrReleased)
	require.NoError(t, l.Release(ctx), "double release is harmless")

	next, err := lk.Acquire(ctx, "rel")
	require.NoError(t, err, "a released key is free at once")
	assert.Greater(t, next.Fence(), l.Fence())
	require.NoError(t, l.Release(ctx), "a second Release of the old lease does nothing")
	assert.EqualValues(t, 1, c.Exists(ctx, lockKey).Val())
	require.NoError(t, next.Release(ctx))
	assert.Equal(t, map[obs.ReleaseResult]int64{obs.ReleaseReleased: 2, obs.ReleaseNotHeld: 0, obs.ReleaseUnknown: 0},
		byResult(t, o, obs.LeaseReleases, obs.ReleaseResults), "only the first Release of each lease reports, released")
	assert.Zero(t, o.HistPoint(t, obs.LeaseCancellationLatency, lockAttrs(defaultName)).Count, "neither was lost")
	held := o.HistPoint(t, obs.LeaseHoldDuration, lockAttrs(defaultName))
	require.EqualValues(t, 2, held.Count)
	shortest, _ := held.Min.Value()
	assert.Positive(t, shortest, "each was held for a while")
}

func testWaitWithBackoff(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	o, tel := observe(t)
	lk := newLocker(t, c, Config{Telemetry: tel})
	holder, err := lk.Acquire(ctx, "wait")
	require.NoError(t, err)

	t.Run("exhausted", func(t *testing.T) {
		start := time.Now()
		_, err := with(t, lk, Config{Wait: 150 * time.Millisecond}).Acquire(ctx, "wait")
		require.ErrorIs(t, err, ErrNotAcquired)
		assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := with(t, lk, Config{Wait: 10 * time.Second}).Acquire(cctx, "wait")
		// Ended during a backoff sleep: not acquired. Ended while an attempt
		// was in flight: that attempt's result is unknown. Either way the
		// deadline is the cause and the wait stopped.
		require.True(t, errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrUnknown), "got %v", err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("acquires when the holder releases", func(t *testing.T) {
		time.AfterFunc(150*time.Millisecond, func() { _ = holder.Release(context.Background()) })
		l, err := with(t, lk, Config{Wait: 10 * time.Second}).Acquire(ctx, "wait")
		require.NoError(t, err)
		assert.Greater(t, l.Fence(), holder.Fence())
		require.NoError(t, l.Release(ctx))
		result, attempts := o.lastAcquire(t)
		assert.Equal(t, obs.AcquireAcquired, result)
		assert.EqualValues(t, 1, attempts, "one attempt, queued: the release granted it the key")
	})
}

func testCallerBracesDoNotChooseSlot(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{})
	slots := map[uint16]bool{}
	for _, k := range []string{"{tag}a", "{tag}b", "{tag}c", "{tag}d", "{tag}e", "{tag}f", "{tag}g", "{tag}h", "}{", "{", "{}"} {
		l, err := lk.Acquire(ctx, k)
		require.NoError(t, err)
		lockKey, fenceKey := redisKeys(lk.set.Namespace, k)
		ls, fs := keySlot(lockKey), keySlot(fenceKey)
		require.Equal(t, ls, fs, "lock and fence keys must share a slot")
		if cc, ok := c.(*redis.ClusterClient); ok {
			require.EqualValues(t, ls, cc.ClusterKeySlot(ctx, lockKey).Val(), "slot computed as Redis does")
		}
		slots[ls] = true
		require.NoError(t, l.Release(ctx))
	}
	assert.Greater(t, len(slots), 4, "keys sharing a caller hash tag must not share a slot")
}

// keySlot computes a key's Redis Cluster slot the way Redis does: CRC16
// (XMODEM) of the hash tag if the key has a non-empty one, else of the key.
func keySlot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

func testLongAndBinaryKeys(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{})
	for _, k := range []string{strings.Repeat("k", 1<<20), "\x00\xff\n\r binary", "ключ 🔒"} {
		l, err := lk.Acquire(ctx, k)
		require.NoError(t, err)
		lockKey, fenceKey := redisKeys(lk.set.Namespace, k)
		assert.Less(t, len(lockKey), 128)
		assert.Less(t, len(fenceKey), 128)
		assert.EqualValues(t, 1, c.Exists(ctx, lockKey).Val())
		_, err = lk.Acquire(ctx, k)
		require.ErrorIs(t, err, ErrNotAcquired)
		require.NoError(t, l.Release(ctx))
	}
	_, err := lk.Acquire(ctx, "")
	require.ErrorIs(t, err, errInvalid)
}

func testNamespacesAreIndependent(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	a := newLocker(t, c, Config{})
	b := newLocker(t, c, Config{})
	la, err := a.Acquire(ctx, "same")
	require.NoError(t, err)
	lb, err := b.Acquire(ctx, "same")
	require.NoError(t, err, "the same key in another namespace is another lease")
	require.NoError(t, la.Release(ctx))
	require.NoError(t, lb.Release(ctx))
}

// testMaxHoldLeaseDoesNotShortenItsBatch: a lease whose cancel point is its
// max hold is not renewed at all, so it cannot hand a ~0 deadline to the
// pipeline its neighbours share.
func testMaxHoldLeaseDoesNotShortenItsBatch(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	ttl := 600 * time.Millisecond
	lk := newLocker(t, c, Config{TTL: ttl})
	bounded, err := with(t, lk, Config{MaxHold: ttl/3 + time.Millisecond}).Acquire(ctx, "bounded")
	require.NoError(t, err)
	leases := make([]*Lease, 100)
	for i := range leases {
		leases[i], err = lk.Acquire(ctx, "neighbour-"+strconv.Itoa(i))
		require.NoError(t, err)
	}
	_ = waitDone(t, bounded, 5*time.Second)
	time.Sleep(2 * ttl) // several renewal rounds of the neighbours
	for i, l := range leases {
		require.NoError(t, l.Err(), "neighbour %d", i)
		require.NoError(t, l.Release(ctx))
	}
	_ = bounded.Release(ctx)
}

// testRenewalKeepsTheFenceRecord: a lease held longer than the fence
// retention keeps its fence record, renewed with the lock.
func testRenewalKeepsTheFenceRecord(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	ttl := 300 * time.Millisecond
	lk := newLocker(t, c, Config{TTL: ttl, FenceRetention: ttl})
	l, err := lk.Acquire(ctx, "kept")
	require.NoError(t, err)
	_, fenceKey := redisKeys(lk.set.Namespace, "kept")
	time.Sleep(4 * ttl)
	require.NoError(t, l.Err())
	fence, err := recordFence(ctx, c, fenceKey)
	require.NoError(t, err, "the fence record outlived its retention while held")
	assert.Equal(t, l.Fence(), fence)
	require.NoError(t, l.Release(ctx))
}

func TestLeaseIsReachableFromItsContext(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer l.Release(ctx)
	child, cancel := context.WithCancel(l.Context())
	defer cancel()
	assert.Same(t, l, FromContext(child))
	tok, ok := fence.FromContext(child)
	require.True(t, ok)
	assert.Equal(t, l.Token(), tok)
	assert.Nil(t, FromContext(ctx))
}

// endedBars counts the tokens on a fence record's ended list, whatever
// their marks (record.lua).
func endedBars(rec string) int {
	return strings.Count(rec, "/") + strings.Count(rec, "+") + strings.Count(rec, "!")
}

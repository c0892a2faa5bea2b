package lease

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/groupcommit"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// slowLocker returns a Locker whose client reaches redis-server through a
// proxy that delays every chunk by d (a round trip takes at least 2d), a
// counter of what the client sends, and the proxy. Scripts are loaded
// before it returns, so counts start at zero.
func slowLocker(t *testing.T, d time.Duration, cfg Config) (*Locker, *cmdCounter, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 4})
	t.Cleanup(func() { _ = c.Close() })
	lk := newLocker(t, c, cfg)
	ctx := testCtx(t)
	l, err := lk.Acquire(ctx, "warm-up")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	counter := &cmdCounter{}
	c.AddHook(counter)
	proxy.Set(faultproxy.Delay(d))
	return lk, counter, srv
}

// lane is the group commit of a Locker on a single node: it has one.
func lane(lk *Locker) *groupcommit.Lane { return lk.lanes.ForKey(context.Background(), "") }

// waitPipe waits until the Locker's group commit has inFlight pipelines in
// flight and queued calls waiting behind them.
func waitPipe(t *testing.T, lk *Locker, inFlight, queued int) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, q := lane(lk).Load()
		return n == inFlight && q == queued
	}, 10*time.Second, time.Millisecond, "want %d pipelines in flight and %d calls queued", inFlight, queued)
}

// fillPipe starts acquires until every pipeline slot is taken, and returns
// their results.
func fillPipe(ctx context.Context, t *testing.T, lk *Locker) []<-chan acquired {
	var first []<-chan acquired
	for i := range groupcommit.MaxInFlight {
		first = append(first, acquireAsync(ctx, lk, "first"+strconv.Itoa(i)))
		waitPipe(t, lk, i+1, 0)
	}
	return first
}

func requireAcquired(t *testing.T, chans []<-chan acquired) []*Lease {
	t.Helper()
	var leases []*Lease
	for _, ch := range chans {
		r := <-ch
		require.NoError(t, r.err)
		leases = append(leases, r.l)
	}
	return leases
}

type acquired struct {
	l   *Lease
	err error
}

func acquireAsync(ctx context.Context, lk *Locker, key string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := lk.Acquire(ctx, key)
		ch <- acquired{l, err}
	}()
	return ch
}

func TestGroupCommitIdleCallGoesAlone(t *testing.T) {
	lk, counter, _ := slowLocker(t, 0, Config{})
	ctx := testCtx(t)
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	assert.Equal(t, int64(2), counter.cmds.Load(), "acquire and release each sent at once, as one command")
	assert.Zero(t, counter.pipelines.Load(), "nothing waits for a batch when nothing is in flight")
}

func TestGroupCommitBatchesWhatArrivesDuringARoundTrip(t *testing.T) {
	const n = 20
	lk, counter, _ := slowLocker(t, 100*time.Millisecond, Config{})
	ctx := testCtx(t)

	first := fillPipe(ctx, t, lk)
	results := make([]<-chan acquired, n)
	for i := range results {
		results[i] = acquireAsync(ctx, lk, "k"+strconv.Itoa(i))
	}
	waitPipe(t, lk, groupcommit.MaxInFlight, n)
	leases := requireAcquired(t, append(results, first...))
	assert.Equal(t, int64(groupcommit.MaxInFlight), counter.cmds.Load(), "the first acquires went alone, at once")
	assert.Equal(t, int64(1), counter.pipelines.Load(), "the %d acquires queued behind them shared one pipeline", n)
	assert.Equal(t, int64(n), counter.pipelined.Load())

	// Releases share pipelines the same way, and so do acquires and
	// releases with each other.
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(func() { assert.NoError(t, l.Release(ctx)) })
	}
	wg.Wait()
	assert.LessOrEqual(t, counter.cmds.Load()+counter.pipelines.Load(), int64(groupcommit.MaxInFlight+1+groupcommit.MaxInFlight+3),
		"%d releases took at most %d round trips", len(leases), groupcommit.MaxInFlight+3)
}

func TestGroupCommitQueuedCallWithdrawnIsNotUnknown(t *testing.T) {
	o, tel := observe(t)
	lk, counter, srv := slowLocker(t, 100*time.Millisecond, Config{Telemetry: tel})
	ctx := testCtx(t)
	first := fillPipe(ctx, t, lk)

	gone, cancel := context.WithCancel(ctx)
	queued := acquireAsync(gone, lk, "withdrawn")
	waitPipe(t, lk, groupcommit.MaxInFlight, 1)
	cancel()
	r := <-queued
	require.ErrorIs(t, r.err, context.Canceled)
	require.NotErrorIs(t, r.err, ErrUnknown, "it never left the queue: nothing to clean up")

	// An acquire whose own deadline passes in the queue is dropped, not sent.
	expired := acquireAsync(ctx, with(t, lk, Config{AcquireTimeout: 20 * time.Millisecond}), "expired")
	r = <-expired
	require.Error(t, r.err)
	require.NotErrorIs(t, r.err, ErrUnknown)
	assert.Contains(t, r.err.Error(), "acquire timeout (20ms) passed before the acquire could be sent")

	requireAcquired(t, first)
	assert.Equal(t, int64(groupcommit.MaxInFlight), counter.cmds.Load())
	assert.Zero(t, counter.pipelines.Load(), "neither withdrawn call was sent")
	for _, key := range []string{"withdrawn", "expired"} {
		lockKey, _ := redisKeys(lk.set.Namespace, key)
		assert.Zero(t, srv.Client(t).Exists(ctx, lockKey).Val(), key)
	}
	assert.Equal(t, map[obs.ResolutionResult]int64{obs.ResolutionReleased: 0, obs.ResolutionAbsent: 0, obs.ResolutionUnresolved: 0},
		byResult(t, o, obs.LeaseUnknownResolutions, obs.ResolutionResults), "nothing to clean up")
	results := map[obs.AcquireResult]int{}
	for _, s := range o.acquires() {
		results[obs.AcquireResult(telemetrytest.Attr(s, obs.AttrResult).AsString())]++
	}
	assert.Equal(t, map[obs.AcquireResult]int{obs.AcquireAcquired: 1 + groupcommit.MaxInFlight, obs.AcquireError: 2}, results) // warm-up and first
}

func TestGroupCommitCallInFlightAbandonedIsUnknown(t *testing.T) {
	o, tel := observe(t)
	lk, _, _ := slowLocker(t, 100*time.Millisecond, Config{Telemetry: tel})
	ctx := testCtx(t)
	first := fillPipe(ctx, t, lk)
	leader := acquireAsync(ctx, lk, "leader")
	waitPipe(t, lk, groupcommit.MaxInFlight, 1) // first in the queue: it will send the next pipeline
	gone, cancel := context.WithCancel(ctx)
	abandoned := acquireAsync(gone, lk, "abandoned")
	waitPipe(t, lk, groupcommit.MaxInFlight, 2)
	<-first[0] // the leader's pipeline, with the other call, is now in flight
	require.Eventually(t, func() bool {
		_, queued := lane(lk).Load()
		return queued == 0
	}, 10*time.Second, time.Millisecond)
	cancel()
	r := <-abandoned
	require.ErrorIs(t, r.err, ErrUnknown, "it may have run")
	require.NoError(t, (<-leader).err, "the other call of the pipeline is unaffected")
	assert.Equal(t, obs.ResolutionReleased, o.waitResolution(t), "it did run, and is cleaned up")
}

func TestReleaseAsync(t *testing.T) {
	o, tel := observe(t)
	lk, _, srv := slowLocker(t, 50*time.Millisecond, Config{Telemetry: tel})
	ctx := testCtx(t)
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "k")
	warm := byResult(t, o, obs.LeaseReleases, obs.ReleaseResults) // the warm-up's
	releases := func(released int64) map[obs.ReleaseResult]int64 {
		return map[obs.ReleaseResult]int64{obs.ReleaseReleased: warm[obs.ReleaseReleased] + released,
			obs.ReleaseNotHeld: warm[obs.ReleaseNotHeld], obs.ReleaseUnknown: warm[obs.ReleaseUnknown]}
	}

	l.ReleaseAsync(ctx)
	require.ErrorIs(t, context.Cause(l.Context()), ErrReleased, "the work ends at once")
	assert.Equal(t, int64(1), lk.pending.n.Load(), "the delete is still on its way")
	l.ReleaseAsync(ctx) // only the first call does anything
	require.NoError(t, l.Release(ctx))

	again, err := lk.Acquire(ctx, "k")
	require.NoError(t, err, "an acquire through the same Locker waits for the delete, it does not contend")
	require.Equal(t, releases(1), byResult(t, o, obs.LeaseReleases, obs.ReleaseResults), "one release, released")
	result, attempts := o.lastAcquire(t)
	assert.Equal(t, obs.AcquireAcquired, result)
	assert.EqualValues(t, 1, attempts)

	again.ReleaseAsync(ctx)
	require.NoError(t, lk.Close(), "Close waits for releases in flight")
	assert.Equal(t, releases(2), byResult(t, o, obs.LeaseReleases, obs.ReleaseResults), "the second, released too")
	assert.Zero(t, srv.Client(t).Exists(ctx, lockKey).Val())
	assert.Zero(t, lk.pending.n.Load())
}

func TestAcquireWaitingForAReleaseEndsWithItsContext(t *testing.T) {
	lk, _, _ := slowLocker(t, 200*time.Millisecond, Config{})
	ctx := testCtx(t)
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	l.ReleaseAsync(ctx)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = lk.Acquire(short, "k")
	require.ErrorIs(t, err, context.DeadlineExceeded, "got %v", err)
}

func TestGroupCommitNearDeadlineDoesNotFailItsNeighbours(t *testing.T) {
	lk, counter, _ := slowLocker(t, 200*time.Millisecond, Config{}) // round trips of 400ms and more
	ctx := testCtx(t)
	first := fillPipe(ctx, t, lk)
	leader := acquireAsync(ctx, lk, "leader")
	waitPipe(t, lk, groupcommit.MaxInFlight, 1)
	short := acquireAsync(ctx, with(t, lk, Config{AcquireTimeout: 600 * time.Millisecond}), "short")
	waitPipe(t, lk, groupcommit.MaxInFlight, 2)
	var others []<-chan acquired
	for i := range 5 {
		others = append(others, acquireAsync(ctx, lk, "other"+strconv.Itoa(i)))
	}
	waitPipe(t, lk, groupcommit.MaxInFlight, 7)

	requireAcquired(t, append(first, leader))
	requireAcquired(t, others) // sent with "short", which runs out of time in flight
	r := <-short
	require.ErrorIs(t, r.err, ErrUnknown, "its own deadline passed while its acquire was in flight")
	assert.Equal(t, int64(1), counter.pipelines.Load(), "the seven queued calls shared one pipeline")
}

func TestGroupCommitLanePerClusterMaster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	lk := newLocker(t, cluster.Client(t), Config{})
	ctx := testCtx(t)
	byMaster := map[string]*groupcommit.Lane{}
	for i := range 60 {
		lockKey, _ := redisKeys(lk.set.Namespace, strconv.Itoa(i))
		master, err := cluster.Client(t).MasterForKey(ctx, lockKey)
		require.NoError(t, err)
		g := lk.lanes.ForKey(ctx, lockKey)
		if prev, ok := byMaster[master.Options().Addr]; ok {
			assert.Same(t, prev, g, "one lane per master")
		}
		byMaster[master.Options().Addr] = g
	}
	require.Len(t, byMaster, 3)
	lanes := map[*groupcommit.Lane]bool{}
	for _, g := range byMaster {
		lanes[g] = true
	}
	assert.Len(t, lanes, 3, "a slow master holds up only its own keys")
}

// panicOnce panics in the first script call it sees, as a faulty go-redis
// hook might.
type panicOnce struct{ armed atomic.Bool }

func (p *panicOnce) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *panicOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") && p.armed.CompareAndSwap(true, false) {
			panic("hook failure")
		}
		return next(ctx, cmd)
	}
}
func (p *panicOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestGroupCommitSurvivesAPanickingSend(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	hook := &panicOnce{}
	c.AddHook(hook)
	lk := newLocker(t, c, Config{})
	ctx := testCtx(t)
	for range groupcommit.MaxInFlight + 1 { // more than the pipeline slots a leaked one would take
		hook.armed.Store(true)
		assert.Panics(t, func() { _, _ = lk.Acquire(ctx, "k") })
	}
	l, err := lk.Acquire(ctx, "other")
	require.NoError(t, err, "the Locker still works")
	require.NoError(t, l.Release(ctx))
	inFlight, _ := lane(lk).Load()
	assert.Zero(t, inFlight)
}

// TestGroupCommitLeaderStopsAtItsOwnDeadline: the caller that sends a
// shared pipeline whose other calls may wait much longer than it (here a
// 600ms acquire timeout against the default 2s) stops waiting at its own
// deadline, well before the pipeline's reply, and its acquire is unknown;
// the others are answered. Only neighbours within a millisecond of its
// deadline may hold it longer (inlineSlack in internal/groupcommit).
func TestGroupCommitLeaderStopsAtItsOwnDeadline(t *testing.T) {
	lk, _, _ := slowLocker(t, 200*time.Millisecond, Config{}) // round trips of 400ms and more
	ctx := testCtx(t)
	first := fillPipe(ctx, t, lk)
	leader := acquireAsync(ctx, with(t, lk, Config{AcquireTimeout: 600 * time.Millisecond}), "leader")
	waitPipe(t, lk, groupcommit.MaxInFlight, 1)
	var others []<-chan acquired
	for i := range 3 {
		others = append(others, acquireAsync(ctx, lk, "other"+strconv.Itoa(i)))
	}
	waitPipe(t, lk, groupcommit.MaxInFlight, 4)
	requireAcquired(t, first)

	r := <-leader
	leaderDone := time.Now()
	require.ErrorIs(t, r.err, ErrUnknown, "its deadline passed while its pipeline was in flight")
	requireAcquired(t, others)
	assert.Greater(t, time.Since(leaderDone), 50*time.Millisecond,
		"the leader returned with the pipeline's reply (about 200ms after its deadline), not at its deadline")
}

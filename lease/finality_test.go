package lease

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// An end is final: a force release, a release and a clean-up each end an
// attempt for good, whatever happens to the key afterwards (while Redis
// keeps its data), and each reports what its command did, whichever copy
// of the command answered. These tests put back, against a real server,
// the interleavings in which they were not.

// barsKept is record.lua's BARS: how many ended attempts a record keeps.
var barsKept = func() int {
	m := regexp.MustCompile(`local BARS = (\d+)`).FindStringSubmatch(recordSrc)
	n, _ := strconv.Atoi(m[1])
	return n
}()

// resend is a go-redis hook that runs each command of script s twice, as
// a re-send after a lost reply does: the first copy runs and its reply is
// lost, the second copy's reply is the one the caller reads.
type resend struct {
	runs func(redis.Cmder) bool
}

func (r resend) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r resend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if r.runs(cmd) {
			_ = next(ctx, cmd) // the first copy: it runs, its reply is lost
		}
		return next(ctx, cmd)
	}
}
func (r resend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if r.runs(cmd) {
				_ = next(ctx, cmds)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// A forced-out holder's acquire has a late copy still on its way. Sixteen
// attempts end on the key after the force, pushing the holder's bar out of
// the record; then the copy lands, finds the key free and its token no
// longer barred, and takes the key with the holder's token. The holder
// must not take that for its own lease: its next renewal is rejected, it
// loses the lease, and its release frees the key.
func TestForceReleaseStaysFinal(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	tap := &acquireTap{}
	c.AddHook(tap)
	ttl := 3 * time.Second // renewals every second: the whole interleaving fits between two
	holderLk := newLocker(t, c, Config{TTL: ttl})
	h, err := holderLk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer func() { _ = h.Release(ctx) }()

	admin := newLocker(t, srv.Client(t), Config{Namespace: holderLk.set.Namespace})
	seen, err := admin.Inspect(ctx, "k")
	require.NoError(t, err)
	_, err = admin.ForceRelease(ctx, "k", seen.Holder)
	require.NoError(t, err)
	acquireReleaseN(ctx, t, admin, "k", barsKept)
	reply := deliverAgain(ctx, t, srv.Client(t), tap.args(1))
	t.Logf("the late copy of the holder's acquire answered %v", reply)

	cause := waitDone(t, h, 2*holderLk.set.renewEvery+holderLk.set.RenewalTimeout+time.Second)
	assert.Contains(t, []LossReason{LossForceReleased, LossRenewalRejected}, lossReason(t, cause),
		"the forced-out holder must lose its lease, not renew it under a late copy's acquisition")
	require.NoError(t, h.Release(ctx), "the release of the lost lease deletes what the late copy took")
	next, err := admin.Acquire(ctx, "k")
	require.NoError(t, err, "the key must be free once the forced-out holder released")
	require.NoError(t, next.Release(ctx))
}

// The holder of a forced key learns why it lost the lease.
func TestForceReleasedHolderSaysSo(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{TTL: 600 * time.Millisecond, Telemetry: h.Tel, Name: "holder"})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()
	seen, err := lk.Inspect(ctx, "k")
	require.NoError(t, err)
	_, err = lk.ForceRelease(ctx, "k", seen.Holder)
	require.NoError(t, err)
	assert.Equal(t, LossForceReleased, lossReason(t, waitDone(t, l, 2*time.Second)))
	require.Eventually(t, func() bool {
		return h.Sum(t, obs.LeaseLosses, lockAttrs("holder", obs.AttrReason, string(LossForceReleased))) == 1
	}, 2*time.Second, 5*time.Millisecond, "the loss is counted with reason force_released")
}

// A force release whose first copy took the key and whose reply was lost
// is answered by its re-sent copy: it must report what the first did.
func TestResentForceReleaseReportsWhatItDid(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	holderLk := newLocker(t, srv.Client(t), Config{})
	l, err := holderLk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()

	c := srv.Client(t)
	c.AddHook(resend{runs: forceScript.Runs})
	admin := NewLocker(c, Config{Namespace: holderLk.set.Namespace, Telemetry: h.Tel, Name: "admin"})
	t.Cleanup(func() { _ = admin.Close() })
	seen, err := admin.Inspect(ctx, "k")
	require.NoError(t, err)
	info, err := admin.ForceRelease(ctx, "k", seen.Holder)
	require.NoError(t, err, "the first copy took the key from the holder")
	assert.Equal(t, seen.Holder, info.Holder)
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseForceReleases, lockAttrs("admin", obs.AttrResult, "released")))
	assert.Zero(t, h.Sum(t, obs.LeaseForceReleases, lockAttrs("admin", obs.AttrResult, "not_held")))
}

// The same for a release, and for the clean-up of an unknown acquire.
func TestResentReleaseReportsWhatItDid(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	c.AddHook(resend{runs: releaseScript.Runs})
	lk := newLocker(t, c, Config{Telemetry: h.Tel, Name: "r"})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx), "the first copy deleted the key")
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseReleases, lockAttrs("r", obs.AttrResult, "released")))
	assert.Zero(t, h.Sum(t, obs.LeaseReleases, lockAttrs("r", obs.AttrResult, "not_held")))

	// A release of a key that had expired stays not_held, re-sent or not.
	short, err := with(t, lk, Config{TTL: 100 * time.Millisecond}).Acquire(ctx, "short")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "short")
	require.NoError(t, c.Del(ctx, lockKey).Err()) // gone, as by expiry
	require.ErrorIs(t, short.Release(ctx), ErrNotHeld)
}

func TestResentCleanUpReportsWhatItDid(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	fault := &replyFault{}
	fault.dropAcquireReply.Store(true)
	c.AddHook(fault)
	c.AddHook(resend{runs: releaseScript.Runs})
	o, tel := observe(t)
	lk := newLocker(t, c, Config{Telemetry: tel})
	_, err := lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrUnknown)
	assert.Equal(t, obs.ResolutionReleased, o.waitResolution(t),
		"the clean-up's first copy deleted the key the unknown acquire took")
}

// An unknown acquire took the key; its clean-up's reply comes after the
// release timeout (TTL/5), so the clean-up ends unresolved and the key
// stays held by the Locker's own attempt for the rest of the TTL. The
// Locker knows that token: its next Acquire of the key must take the key
// over from it, never be refused as contended by it.
func TestLockerIsNeverContendedByItsOwnGhost(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	ttl := time.Second
	fault := &replyFault{resolveDelay: ttl/5 + 50*time.Millisecond}
	fault.dropAcquireReply.Store(true)
	c.AddHook(fault)
	o, tel := observe(t)
	lk := newLocker(t, c, Config{TTL: ttl, Telemetry: tel})
	_, err := lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrUnknown)
	fault.dropAcquireReply.Store(false)

	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err, "the Locker was refused by its own unknown acquire")
	assert.Equal(t, obs.ResolutionUnresolved, o.waitResolution(t), "the interleaving needs an unresolved clean-up")
	lockKey, _ := redisKeys(lk.set.Namespace, "k")
	pttl := srv.Client(t).PTTL(ctx, lockKey).Val()
	assert.Greater(t, pttl, l.Remaining(), "the lease ends before its key can expire")
	_ = l.Release(ctx) // through the same slow hook: it may end unknown, and the key expire
}

// A fence record lost while its lease holds the key (evicted, deleted from
// outside) is no newer acquisition: the renewal renews and writes the
// lease's fence back, so the next acquire still mints above it.
func TestRenewalRestoresALostRecord(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{TTL: 600 * time.Millisecond})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	_, fenceKey := redisKeys(lk.set.Namespace, "k")
	require.NoError(t, c.Del(ctx, fenceKey).Err())
	require.Eventually(t, func() bool {
		v, err := recordFence(ctx, c, fenceKey)
		return err == nil && v == l.Fence()
	}, 2*time.Second, 5*time.Millisecond, "the renewal wrote the lease's fence back")
	require.NoError(t, l.Err(), "the lease is still held")
	require.NoError(t, l.Release(ctx))
	next, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.Greater(t, next.Fence(), l.Fence())
	require.NoError(t, next.Release(ctx))
}

// A refused acquire writes nothing, also when it carries ghosts: a ghost's
// lock stays until an acquire that goes through.
func TestARefusedAcquireWithGhostsWritesNothing(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{})
	acq := attemptOf(lk.set, "k", "NEW")
	acq.ghosts = []string{"GHOST"}
	lockKey, fenceKey := acq.keys.Lock, acq.keys.Fence
	const exhausted = "9007199254740991"
	require.NoError(t, c.Set(ctx, fenceKey, exhausted, 0).Err())
	require.NoError(t, c.Set(ctx, lockKey, "GHOST", time.Minute).Err())
	r := lk.attempt(ctx, lk.set, lockKey, acq.call())
	require.Error(t, r.refused)
	assert.False(t, r.definite())
	assert.Equal(t, "GHOST", c.Get(ctx, lockKey).Val(), "the refused acquire deleted the ghost's lock")
	assert.Equal(t, exhausted, c.Get(ctx, fenceKey).Val(), "the refused acquire wrote the record")
}

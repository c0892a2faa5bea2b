package lease

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/script"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

func tokenHash(owner string) string {
	sum := sha1.Sum([]byte(owner))
	return hex.EncodeToString(sum[:])[:holderHashLen]
}

func testInspectShowsAHeldKey(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{TTL: 5 * time.Second})
	l, err := lk.Acquire(ctx, "report")
	require.NoError(t, err)
	defer l.Release(ctx)
	_, err = lk.Acquire(ctx, "report") // contended: its token is barred
	require.ErrorIs(t, err, ErrNotAcquired)

	info, err := lk.Inspect(ctx, "report")
	require.NoError(t, err)
	assert.Equal(t, "report", info.Key)
	lockKey, _ := redisKeys(lk.set.Namespace, "report")
	assert.Equal(t, hashTag(lockKey), info.KeyHash)
	assert.True(t, info.Held)
	assert.Greater(t, info.TTL, 3*time.Second)
	assert.LessOrEqual(t, info.TTL, 5*time.Second)
	assert.Equal(t, l.Fence(), info.Fence)
	assert.Equal(t, 1, info.Barred, "the contended attempt")
	assert.Equal(t, tokenHash(ownerOf(l)), info.Holder)

	// Another namespace is another key.
	other, err := lk.With(Config{Namespace: lk.set.Namespace + "x"})
	require.NoError(t, err)
	info, err = other.Inspect(ctx, "report")
	require.NoError(t, err)
	assert.False(t, info.Held)
}

func testInspectOfAFreeKey(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{})
	info, err := lk.Inspect(ctx, "never-taken")
	require.NoError(t, err)
	lockKey, _ := redisKeys(lk.set.Namespace, "never-taken")
	assert.Equal(t, KeyInfo{Key: "never-taken", KeyHash: hashTag(lockKey)}, info)

	last := acquireReleaseN(ctx, t, lk, "taken-before", 2)
	info, err = lk.Inspect(ctx, "taken-before")
	require.NoError(t, err)
	assert.False(t, info.Held)
	assert.Zero(t, info.TTL)
	assert.Empty(t, info.Holder)
	assert.Equal(t, last, info.Fence, "the record keeps the newest fence")
	assert.Equal(t, 2, info.Barred, "both released attempts")

	_, err = lk.Inspect(ctx, "")
	require.ErrorIs(t, err, errInvalid)

	// A lock key written by something else: held, without an expiry.
	lockKey, _ = redisKeys(lk.set.Namespace, "foreign")
	require.NoError(t, c.Set(ctx, lockKey, "not-lockwatch", 0).Err())
	info, err = lk.Inspect(ctx, "foreign")
	require.NoError(t, err)
	assert.True(t, info.Held)
	assert.Equal(t, time.Duration(-1), info.TTL)
}

func testForceReleaseLosesTheHolder(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	holder := newLocker(t, c, Config{TTL: 600 * time.Millisecond, Telemetry: h.Tel})
	l, err := holder.Acquire(ctx, "stuck")
	require.NoError(t, err)
	defer l.Release(ctx)
	admin, err := holder.With(Config{Name: "admin"})
	require.NoError(t, err)

	seen, err := admin.Inspect(ctx, "stuck")
	require.NoError(t, err)
	info, err := admin.ForceRelease(ctx, "stuck", seen.Holder)
	require.NoError(t, err)
	assert.True(t, info.Held)
	assert.Equal(t, tokenHash(ownerOf(l)), info.Holder)
	assert.Equal(t, l.Fence(), info.Fence)
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseForceReleases, lockAttrs("admin", obs.AttrResult, "released")))
	forcedAt := time.Now()
	level, attrs, ok := h.Logs.Find("released by force")
	require.True(t, ok, "a force release is logged")
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, info.Holder, attrs[obs.AttrHolder])
	assert.Equal(t, strconv.FormatInt(l.Fence(), 10), attrs[obs.AttrFence])
	assert.NotContains(t, attrs, obs.AttrKey, "the raw key stays out of logs by default")
	assert.NotContains(t, attrs, "error")

	// The holder's next renewal, within TTL/3 plus the renewal timeout, is
	// rejected (200 + 120 ms here; the rest is slack for a loaded machine),
	// and says why.
	assert.Equal(t, LossForceReleased, lossReason(t, waitDone(t, l, 2*time.Second)))
	assert.Less(t, time.Since(forcedAt), holder.set.renewEvery+holder.set.RenewalTimeout+400*time.Millisecond)
	// A rejected renewal has no error to log, and says so by saying nothing.
	for msg, want := range map[string]string{"renewal failed": "rejected", "lease lost": "force_released"} {
		require.Eventually(t, func() bool { _, _, ok := h.Logs.Find(msg); return ok }, 2*time.Second, 5*time.Millisecond, msg)
		_, attrs, _ := h.Logs.Find(msg)
		assert.Equal(t, want, cmp.Or(attrs[obs.AttrReason], attrs[obs.AttrResult]), msg)
		assert.NotContains(t, attrs, "error", msg)
	}

	// Again, as a go-redis re-send of the call would: it answers what the
	// first did.
	again, err := admin.ForceRelease(ctx, "stuck", seen.Holder)
	require.NoError(t, err)
	assert.Equal(t, seen.Holder, again.Holder)

	// A late copy of the holder's acquire cannot take the key back.
	lockKey, _ := redisKeys(holder.set.Namespace, "stuck")
	late := holder.attempt(ctx, holder.set, lockKey, attemptOf(holder.set, "stuck", ownerOf(l)).call())
	require.NoError(t, late.err)
	assert.False(t, late.acquired, "the forced-out token is barred")

	next, err := holder.Acquire(ctx, "stuck")
	require.NoError(t, err)
	defer next.Release(ctx)
	assert.Greater(t, next.Fence(), l.Fence())
}

func testForceReleaseOfAFreeKey(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	lk := newLocker(t, c, Config{Telemetry: h.Tel, Name: "admin"})
	last := acquireReleaseN(ctx, t, lk, "free", 1)
	before, err := lk.Inspect(ctx, "free")
	require.NoError(t, err)

	info, err := lk.ForceRelease(ctx, "free", "0123456789ab")
	require.ErrorIs(t, err, ErrNotHeld)
	assert.False(t, info.Held)
	assert.Empty(t, info.Holder)
	assert.Equal(t, last, info.Fence)
	after, err := lk.Inspect(ctx, "free")
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing changed")
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseForceReleases, lockAttrs("admin", obs.AttrResult, "not_held")))
	assert.EqualValues(t, 0, h.Sum(t, obs.LeaseForceReleases, lockAttrs("admin", obs.AttrResult, "released")))
	_, _, ok := h.Logs.Find("changed nothing")
	assert.True(t, ok, "logged as changing nothing")

	for _, bad := range []struct{ key, holder string }{{"", "0123456789ab"}, {"free", ""}, {"free", "0123456789AB"}, {"free", "0123456789abc"}} {
		_, err = lk.ForceRelease(ctx, bad.key, bad.holder)
		require.ErrorIs(t, err, errInvalid, "%q %q", bad.key, bad.holder)
	}

	// The script does not rest on that refusal: a holder shorter than the
	// hash, down to none, matches no holder.
	l, err := lk.Acquire(ctx, "free")
	require.NoError(t, err)
	defer l.Release(ctx)
	for _, short := range []string{"", tokenHash(ownerOf(l))[:6]} {
		force := forceArgs{keys: keysOf(lk.set.Namespace, "free"), retention: lk.set.retentionArg, holder: short}
		vals, err := reply(script.RunOne(ctx, c, force.call()), 3)
		require.NoError(t, err)
		assert.EqualValues(t, 0, vals[0], "the script released the key for holder %q", short)
	}
	require.NoError(t, l.Err(), "the holder lost its lease")
	seen, err := lk.Inspect(ctx, "free")
	require.NoError(t, err)
	assert.True(t, seen.Held)
}

// A force names the holder it ends: one that comes after the stuck holder
// released and another took the key changes nothing, and the new holder
// keeps its lease.
func testForceReleaseSparesAnotherHolder(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	lk := newLocker(t, c, Config{TTL: 600 * time.Millisecond, Telemetry: h.Tel})
	stuck, err := lk.Acquire(ctx, "handed-over")
	require.NoError(t, err)
	seen, err := lk.Inspect(ctx, "handed-over")
	require.NoError(t, err)
	require.NoError(t, stuck.Release(ctx))
	next, err := lk.Acquire(ctx, "handed-over")
	require.NoError(t, err)
	defer next.Release(ctx)

	info, err := lk.ForceRelease(ctx, "handed-over", seen.Holder)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.True(t, info.Held)
	assert.Equal(t, tokenHash(ownerOf(next)), info.Holder, "the holder now")
	assert.Equal(t, next.Fence(), info.Fence)
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseForceReleases, lockAttrs("default", obs.AttrResult, "not_held")))
	// Two renewal periods later the new holder still holds it.
	time.Sleep(2 * lk.set.renewEvery)
	require.NoError(t, next.Err())
	now, err := lk.Inspect(ctx, "handed-over")
	require.NoError(t, err)
	assert.Equal(t, info.Holder, now.Holder)
}

// With Config.ReplicationAcks, a force that too few replicas acknowledged
// is unknown: a failover now could bring the holder's key back.
func TestForceReleaseWaitsForReplicas(t *testing.T) {
	ctx := testCtx(t)
	primary := redistest.Start(t)
	h := telemetrytest.New(t)
	plain := newLocker(t, primary.Client(t), Config{Telemetry: h.Tel})
	lk := with(t, plain, Config{ReplicationAcks: 1, ReplicationTimeout: 100 * time.Millisecond})
	force := func(key string) error {
		l, err := plain.Acquire(ctx, key)
		require.NoError(t, err)
		defer l.Release(ctx)
		seen, err := lk.Inspect(ctx, key)
		require.NoError(t, err)
		_, err = lk.ForceRelease(ctx, key, seen.Holder)
		return err
	}

	err := force("no-replica")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNotHeld)
	assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged")
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseForceReleases, lockAttrs("default", obs.AttrResult, "unknown")))
	_, attrs, ok := h.Logs.Find("outcome unknown")
	require.True(t, ok)
	assert.Contains(t, attrs["error"], "replicas acknowledged")

	replica := redistest.Start(t)
	require.NoError(t, replica.ReplicaOf(primary))
	require.NoError(t, force("one-replica"))
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseForceReleases, lockAttrs("default", obs.AttrResult, "released")))
}

// A forced release hands the key to the queue's head as a release does:
// with a refresh every minute, only the grant can reach it within the
// test.
func testForceReleaseWakesAWaiter(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	lk := newLocker(t, c, Config{TTL: time.Minute})
	l, err := lk.Acquire(ctx, "queue")
	require.NoError(t, err)
	defer l.Release(ctx)
	waiter := NewLocker(c, Config{Namespace: lk.set.Namespace, Wait: 30 * time.Second, BackoffMin: time.Minute, BackoffMax: time.Minute})
	defer waiter.Close()

	got := make(chan *Lease, 1)
	go func() {
		w, err := waiter.Acquire(ctx, "queue")
		assert.NoError(t, err)
		got <- w
	}()
	queue := keysOf(lk.set.Namespace, "queue").Queue
	require.Eventually(t, func() bool {
		n, _ := c.LLen(ctx, queue).Result()
		return n == 1
	}, 10*time.Second, 5*time.Millisecond, "the waiter never queued")
	seen, err := lk.Inspect(ctx, "queue")
	require.NoError(t, err)
	_, err = lk.ForceRelease(ctx, "queue", seen.Holder)
	require.NoError(t, err)
	select {
	case w := <-got:
		require.NotNil(t, w)
		assert.Greater(t, w.Fence(), l.Fence())
		require.NoError(t, w.Release(ctx))
	case <-time.After(20 * time.Second):
		t.Fatal("the forced release did not hand the key to the waiter")
	}
}

// Snapshot lists the active leases with their figures, and the last losses.
func TestSnapshot(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{TTL: 300 * time.Millisecond, Name: "jobs"})
	a, err := lk.Acquire(ctx, "a")
	require.NoError(t, err)
	defer a.Release(ctx)
	b, err := with(t, lk, Config{Name: "billing", MaxHold: 50 * time.Millisecond}).Acquire(ctx, "b")
	require.NoError(t, err)

	snap := lk.Snapshot()
	assert.WithinDuration(t, time.Now(), snap.Taken, time.Second)
	require.Len(t, snap.Leases, 2)
	assert.Equal(t, "billing", snap.Leases[0].Name, "by name")
	assert.Equal(t, "final", snap.Leases[0].State, "its max hold comes before any renewal could help")
	first := snap.Leases[1]
	lockKey, _ := redisKeys(lk.set.Namespace, "a")
	assert.Equal(t, LeaseInfo{Name: "jobs", KeyHash: hashTag(lockKey), Namespace: lk.set.Namespace, Permit: -1, Fence: a.Fence(), Holder: tokenHash(ownerOf(a)), State: "held", TTL: 300 * time.Millisecond,
		Age: first.Age, Remaining: first.Remaining}, first)
	assert.Positive(t, first.Age)
	assert.Positive(t, first.Remaining)
	assert.LessOrEqual(t, first.Remaining, 300*time.Millisecond)

	// b reaches its max hold; a is renewed.
	require.Equal(t, LossMaxHold, lossReason(t, waitDone(t, b, 2*time.Second)))
	require.Eventually(t, func() bool {
		s := lk.Snapshot()
		return len(s.Leases) == 1 && s.Leases[0].Renewals >= 2 && len(s.Losses) == 1
	}, 5*time.Second, 5*time.Millisecond)
	snap = lk.Snapshot()
	assert.Positive(t, snap.Leases[0].LastRenewal)
	lost := snap.Losses[0]
	assert.Equal(t, "billing", lost.Name)
	assert.Equal(t, "lost", lost.State)
	assert.Equal(t, LossMaxHold, lost.Reason)
	assert.Equal(t, b.Fence(), lost.Fence)
	assert.InDelta(t, 50*time.Millisecond, lost.Age, float64(40*time.Millisecond), "held until its max hold")
	assert.WithinDuration(t, time.Now(), lost.LostAt, 5*time.Second)
	assert.Empty(t, lost.Key, "raw keys only with telemetry.Config.RawKeys")
	assert.Zero(t, lost.Remaining)
	require.NoError(t, b.Release(ctx))

	// A Locker made with With shares the scheduler, and so the snapshot.
	derived, err := lk.With(Config{Name: "derived"})
	require.NoError(t, err)
	d, err := derived.Acquire(ctx, "d")
	require.NoError(t, err)
	defer d.Release(ctx)
	names := []string{}
	for _, l := range lk.Snapshot().Leases {
		names = append(names, l.Name)
	}
	assert.Equal(t, []string{"derived", "jobs"}, names)
}

// A renewal in flight shows: with Redis stopped, the lease reads renewing
// from the renewal's send until its timeout loses it.
func TestSnapshotShowsARenewalInFlight(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{TTL: 3 * time.Second})
	l, err := lk.Acquire(ctx, "slow")
	require.NoError(t, err)
	require.Equal(t, "held", lk.Snapshot().Leases[0].State)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	assert.Eventually(t, func() bool {
		s := lk.Snapshot()
		return len(s.Leases) == 1 && s.Leases[0].State == "renewing"
	}, 2*time.Second, 2*time.Millisecond, "the renewal sent into the stopped server never showed")
	require.NoError(t, srv.Resume())
	require.NoError(t, l.Release(ctx))
}

// The raw key appears only with telemetry.Config.RawKeys, and the losses kept
// are the last 32, newest first.
func TestSnapshotRawKeysAndTheLastLosses(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	h := telemetrytest.NewRawKeys(t)
	lk := NewLocker(srv.Client(t), Config{Namespace: testNamespace(t), Telemetry: h.Tel})
	var fences []int64
	for i := range lastLosses + 8 {
		l, err := lk.Acquire(ctx, "k"+strconv.Itoa(i))
		require.NoError(t, err)
		fences = append(fences, l.Fence())
	}
	snap := lk.Snapshot()
	require.Len(t, snap.Leases, lastLosses+8)
	for _, l := range snap.Leases {
		assert.NotEmpty(t, l.Key)
	}
	require.NoError(t, lk.Close()) // loses every lease, reason closed
	require.Eventually(t, func() bool { return len(lk.Snapshot().Losses) == lastLosses }, 5*time.Second, 5*time.Millisecond)
	losses := lk.Snapshot().Losses
	// Close loses them by cancel point, so in the order they were taken:
	// newest first are the last taken.
	for i, l := range losses {
		assert.Equal(t, fences[len(fences)-1-i], l.Fence, "loss %d", i)
	}
	for _, l := range losses {
		assert.Equal(t, LossClosed, l.Reason)
		assert.NotEmpty(t, l.Key)
	}
	assert.Empty(t, lk.Snapshot().Leases)
}

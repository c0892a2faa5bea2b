package lease

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// A contended Acquire names the holder's replica (Config.Replica), fast or
// after a wait in the queue, and so does Inspect; a holder without one is
// not named. The owner token's random part is in none of it.
func TestRefusalNamesTheHoldersReplica(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	a := newLocker(t, srv.Client(t), Config{TTL: 5 * time.Second, Replica: "pod-a.zone-1:7"})
	ns := a.set.Namespace
	b := newLocker(t, srv.Client(t), Config{TTL: 5 * time.Second, Namespace: ns, Replica: "pod-b"})
	unnamed := newLocker(t, srv.Client(t), Config{TTL: 5 * time.Second, Namespace: ns})

	held, err := a.Acquire(ctx, "k")
	require.NoError(t, err)
	defer held.Release(ctx)
	random, replica, found := strings.Cut(held.owner, "@")
	require.True(t, found, "the token carries the replica: %q", held.owner)
	assert.Equal(t, "pod-a.zone-1:7", replica)
	assert.Equal(t, held.owner, srv.Client(t).Get(ctx, keysOf(ns, "k").Lock).Val())

	for _, lk := range []*Locker{b, with(t, b, Config{Wait: 150 * time.Millisecond, BackoffMax: 20 * time.Millisecond}), unnamed} {
		_, err := lk.Acquire(ctx, "k")
		var busy *NotAcquiredError
		require.ErrorAs(t, err, &busy)
		assert.Equal(t, "pod-a.zone-1:7", busy.HolderReplica, "waiting %v", lk.set.Wait)
		assert.Contains(t, err.Error(), `held by replica "pod-a.zone-1:7"`)
		assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, busy, busy), random)
	}
	info, err := b.Inspect(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "pod-a.zone-1:7", info.HolderReplica)
	assert.Equal(t, holderOf(held.owner), info.Holder, "the hash is of the whole token")
	assert.NotContains(t, fmt.Sprintf("%+v", info), random)

	plain, err := unnamed.Acquire(ctx, "plain")
	require.NoError(t, err)
	defer plain.Release(ctx)
	assert.NotContains(t, plain.owner, "@", "no replica, no suffix")
	_, err = b.Acquire(ctx, "plain")
	var busy *NotAcquiredError
	require.ErrorAs(t, err, &busy)
	assert.Empty(t, busy.HolderReplica, "a holder without Replica is not named")
	assert.Contains(t, err.Error(), "held by another owner")
	info, err = b.Inspect(ctx, "plain")
	require.NoError(t, err)
	assert.Empty(t, info.HolderReplica)
}

// A lock value that lockwatch cannot have written names no replica: only
// a name Config.Replica could hold reaches a refusal.
func TestRefusalNamesNoForeignReplica(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	lk := newLocker(t, srv.Client(t), Config{Replica: "pod-b"})
	for _, v := range []string{"token@", "token@pod a", "token@" + strings.Repeat("r", 65), "token"} {
		require.NoError(t, srv.Client(t).Set(ctx, keysOf(lk.set.Namespace, "k").Lock, v, time.Minute).Err())
		_, err := lk.Acquire(ctx, "k")
		var busy *NotAcquiredError
		require.ErrorAs(t, err, &busy)
		assert.Empty(t, busy.HolderReplica, "lock %q", v)
		assert.NotContains(t, err.Error(), "token", "lock %q", v)
	}
}

// An acquire of a Locker with a Replica that go-redis sends twice (the
// first reply lost) gets the one fence its first copy minted: the copy
// finds its own token, replica and all, in the lock.
func TestAResentAcquireWithAReplicaKeepsItsFence(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	c := srv.Client(t)
	c.AddHook(resend{runs: acquireScript.Runs})
	lk := newLocker(t, c, Config{Replica: "pod-a"})
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	defer l.Release(ctx)
	info, err := newLocker(t, srv.Client(t), Config{Namespace: lk.set.Namespace}).Inspect(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, info.Fence, l.Fence(), "one fence minted, the one the lease holds")
	assert.Equal(t, "pod-a", info.HolderReplica)
	assert.Equal(t, holderOf(l.owner), info.Holder)
	assert.Zero(t, info.Barred, "the copy barred nothing: it found its own lock")
}

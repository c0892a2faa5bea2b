package main

import (
	"context"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded Redis must expire keys with the wall clock, without anyone
// moving its clock: leases that are not renewed have to run out.
func TestEmbeddedRedisExpiresKeysInRealTime(t *testing.T) {
	ctx := context.Background()
	srv, err := startRedis(ctx, "")
	require.NoError(t, err)
	defer srv.close()
	c := srv.client()
	defer c.Close()

	require.NoError(t, c.Set(ctx, "k", "v", 300*time.Millisecond).Err())
	first, err := c.PTTL(ctx, "k").Result()
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	second, err := c.PTTL(ctx, "k").Result()
	require.NoError(t, err)
	assert.Less(t, second, first, "the TTL runs down")
	require.Eventually(t, func() bool { return c.Exists(ctx, "k").Val() == 0 }, 2*time.Second, 10*time.Millisecond)
}

// Everything lockwatch asks of Redis works on the embedded one: its acquire,
// renew and release scripts (EVALSHA, and EVAL after NOSCRIPT, in pipelines
// too), contention with the holder's PTTL, expiry of a lease no one renews,
// fences that keep increasing, and the fenced store's write and admit
// scripts, with their clock bound on the server's TIME.
func TestEmbeddedRedisRunsLockwatch(t *testing.T) {
	ctx := context.Background()
	srv, err := startRedis(ctx, "")
	require.NoError(t, err)
	defer srv.close()
	c := srv.client()
	defer c.Close()
	const ttl = 300 * time.Millisecond

	locker := lease.NewLocker(c, lease.Config{TTL: ttl})
	l, err := locker.Acquire(ctx, "acct-1")
	require.NoError(t, err)
	_, err = locker.Acquire(ctx, "acct-1")
	var busy *lease.NotAcquiredError
	require.ErrorAs(t, err, &busy)
	assert.Positive(t, busy.HolderTTL)
	assert.LessOrEqual(t, busy.HolderTTL, ttl)

	// Renewed in pipelines, also after the script cache is flushed.
	require.NoError(t, c.ScriptFlush(ctx).Err())
	time.Sleep(2 * ttl)
	require.NoError(t, l.Err(), "renewed past its TTL")
	require.NoError(t, l.Release(ctx))

	// A lease nobody renews (its Locker closed) expires after its TTL.
	held, err := locker.Acquire(ctx, "acct-1")
	require.NoError(t, err)
	require.NoError(t, locker.Close())
	other := lease.NewLocker(c, lease.Config{TTL: ttl})
	defer other.Close()
	var next *lease.Lease
	start := time.Now()
	require.Eventually(t, func() bool {
		next, err = other.Acquire(ctx, "acct-1")
		return err == nil
	}, 3*time.Second, 5*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), ttl/2, "not before the key expired")
	assert.Greater(t, next.Fence(), held.Fence())
	assert.Greater(t, held.Fence(), l.Fence())
	require.ErrorIs(t, held.Release(ctx), lease.ErrNotHeld)
	require.NoError(t, next.Release(ctx))

	// Unsigned tokens: the scripts also bound their fences by the server's
	// TIME, which the embedded Redis must serve from the wall clock.
	store := fence.NewRedisStore(c, "ledger", fence.RedisConfig{})
	tok := func(key string, n int64) fence.Token { return fence.Mint("lockwatch", key, n, nil) }
	require.NoError(t, store.Write(ctx, "a", tok("a", 41), []byte("x")))
	require.ErrorIs(t, store.Write(ctx, "a", tok("a", 41), []byte("y")), fence.ErrStale)
	require.NoError(t, store.Admit(ctx, "b", tok("b", 7)))
	require.NoError(t, store.Admit(ctx, "b", tok("b", 7)))
	require.ErrorIs(t, store.Admit(ctx, "b", tok("b", 6)), fence.ErrStale)
	ahead := time.Now().Add(time.Hour).UnixMicro()
	require.ErrorIs(t, store.Write(ctx, "a", tok("a", ahead), []byte("z")), fence.ErrAhead)
	require.ErrorIs(t, store.Admit(ctx, "b", tok("b", ahead)), fence.ErrAhead)
	value, mark, err := store.Read(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, "x", string(value))
	assert.EqualValues(t, 41, mark, "a refused token moves no mark")
	_, mark, err = store.Read(ctx, "b")
	require.NoError(t, err)
	assert.EqualValues(t, 7, mark, "a refused token moves no mark")
}

package fence_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// noPersistence are the arguments of a Redis that keeps nothing across a
// restart (the test servers' default, written out).
var noPersistence = []string{"--save", "", "--appendonly", "no"}

// TestCheckDurable: Check passes a Redis that keeps the marks across a
// restart and one that cannot evict them, and refuses, with ErrNotDurable,
// one that keeps neither an append-only file nor snapshots and one whose
// policy may evict a mark.
func TestCheckDurable(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	check := func(args ...string) error {
		return fence.NewRedisStore(redistest.Start(t, args...).Client(t), "orders", fence.RedisConfig{}).Check(ctx)
	}

	err := check(noPersistence...)
	require.ErrorIs(t, err, fence.ErrNotDurable)
	require.ErrorContains(t, err, "neither an append-only file (aof_enabled:0) nor RDB snapshots")

	assert.NoError(t, check("--save", "", "--appendonly", "yes"), "an append-only file")
	assert.NoError(t, check("--save", "", "--appendonly", "yes", "--appendfsync", "always"), "an append-only file, flushed on every write")
	assert.NoError(t, check("--save", "60 1", "--appendonly", "no"), "RDB snapshots")
	assert.NoError(t, check("--appendonly", "yes", "--maxmemory-policy", "volatile-lru"), "marks have no TTL: a volatile-* policy never evicts one")

	err = check("--appendonly", "yes", "--maxmemory-policy", "allkeys-lru")
	require.ErrorIs(t, err, fence.ErrNotDurable)
	require.ErrorContains(t, err, `maxmemory-policy is "allkeys-lru"`)

	err = check("--save", "", "--appendonly", "no", "--rename-command", "CONFIG", "")
	require.Error(t, err, "without CONFIG, snapshots cannot be ruled out")
	require.NotErrorIs(t, err, fence.ErrNotDurable, "unknown, not known to forget")
	require.ErrorContains(t, err, "CONFIG GET save failed")
	assert.NoError(t, check("--appendonly", "yes", "--rename-command", "CONFIG", ""), "an append-only file needs no CONFIG")
}

// TestCheckDurableEveryNode: on Cluster every master is asked, and on a
// Ring every shard; the error names the server.
func TestCheckDurableEveryNode(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	cl := redistest.StartCluster(t, 3) // the test servers keep nothing
	err := fence.NewRedisStore(cl.Client(t), "orders", fence.RedisConfig{}).Check(ctx)
	require.ErrorIs(t, err, fence.ErrNotDurable)
	assert.Regexp(t, `on 127\.0\.0\.1:\d+: neither`, err.Error())

	durable, volatile := redistest.Start(t, "--appendonly", "yes"), redistest.Start(t, noPersistence...)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": durable.Addr(), "b": volatile.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	err = fence.NewRedisStore(ring, "orders", fence.RedisConfig{}).Check(ctx)
	require.ErrorIs(t, err, fence.ErrNotDurable)
	assert.ErrorContains(t, err, "on "+volatile.Addr()+":")
}

// TestRestartWithoutPersistenceAcceptsAStaleWrite is the fault Check
// exists for: a fence store on a Redis that keeps nothing (as the lock's
// Redis may) forgets its marks when the server restarts, and the late
// write of an older lease is then accepted over a newer one's. Check
// reports that server before the first write; on a server with an
// append-only file (appendfsync everysec, the default) the same crash of
// Redis takes nothing back and the late write is refused.
func TestRestartWithoutPersistenceAcceptsAStaleWrite(t *testing.T) {
	redistest.Require(t)
	for _, tc := range []struct {
		name    string
		args    []string
		durable bool
	}{
		{"no persistence", noPersistence, false},
		{"append-only file", []string{"--save", "", "--appendonly", "yes"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srv := redistest.Start(t, tc.args...)
			store := fence.NewRedisStore(srv.Client(t), "orders", fence.RedisConfig{})
			checked := store.Check(ctx)

			require.NoError(t, store.Write(ctx, "order-7", tk("order-7", 42), []byte("paid by 42")))
			require.NoError(t, srv.Kill()) // kill -9: a crash of Redis
			require.NoError(t, srv.Restart())
			late := store.Write(ctx, "order-7", tk("order-7", 41), []byte("written late by 41"))
			value, mark, err := store.Read(ctx, "order-7")
			require.NoError(t, err)

			if tc.durable {
				require.NoError(t, checked)
				stale(t, late, 41, 42)
				assert.Equal(t, "paid by 42", string(value))
				return
			}
			require.NoError(t, late, "the mark was forgotten: the older token is accepted")
			assert.Equal(t, "written late by 41", string(value), "a stale write accepted")
			assert.Equal(t, int64(41), mark)
			require.ErrorIs(t, checked, fence.ErrNotDurable, "Check reported this server before the first write")
		})
	}
}

// TestHostCrashTakesBackTheLastSecond: with appendfsync everysec, a crash
// of the host loses the writes the system had not yet flushed to disk, up
// to about the last second. Cutting them off the append-only file, as the
// crash would, takes a key's value and mark back together to the write
// before, and a late write whose token lies between that mark and the lost
// one is then accepted, though the newer write had been acknowledged.
func TestHostCrashTakesBackTheLastSecond(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	srv := redistest.Start(t, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec")
	client := srv.Client(t)
	store := fence.NewRedisStore(client, "orders", fence.RedisConfig{})
	require.NoError(t, store.Check(ctx))

	require.NoError(t, store.Write(ctx, "order-7", tk("order-7", 40), []byte("paid by 40")))
	aof := incrFile(ctx, t, client)
	flushed, err := os.Stat(aof)
	require.NoError(t, err)
	require.NoError(t, store.Write(ctx, "order-7", tk("order-7", 42), []byte("paid by 42")))
	require.NoError(t, srv.Kill())
	require.NoError(t, os.Truncate(aof, flushed.Size())) // what the host's crash did not let reach the disk
	require.NoError(t, srv.Restart())

	value, mark, err := store.Read(ctx, "order-7")
	require.NoError(t, err)
	assert.Equal(t, "paid by 40", string(value), "the value went back with its mark")
	assert.Equal(t, int64(40), mark)
	require.NoError(t, store.Write(ctx, "order-7", tk("order-7", 41), []byte("written late by 41")), "older than the lost 42, newer than the kept 40: accepted")
	stale(t, store.Write(ctx, "order-7", tk("order-7", 40), []byte("written late by 40")), 40, 41)
}

// incrFile is the file the server appends its writes to now: the last
// incremental file of its append-only directory.
func incrFile(ctx context.Context, t *testing.T, client *redis.Client) string {
	t.Helper()
	cfg, err := client.ConfigGet(ctx, "*").Result()
	require.NoError(t, err)
	dir := filepath.Join(cfg["dir"], cfg["appenddirname"])
	files, err := filepath.Glob(filepath.Join(dir, cfg["appendfilename"]+".*.incr.aof"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one incremental file in %s", dir)
	return files[0]
}

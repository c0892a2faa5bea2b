package fence_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redisacl"
)

// The Redis ACL of SECURITY.md for a fenced RedisStore's user
// (internal/testenv/redisacl), applied to a real redis-server: the store admits,
// writes, reads and checks, and nothing outside its namespace; a user
// missing a permission fails closed.

// aclKey is a store key ("<namespace>:<resource>:{<hash>}") in the default
// namespace, for writes by hand.
const aclKey = redisacl.StoreNamespace + ":orders:{0123456789abcdef0123456789abcdef}"

// TestStoreACL: a RedisStore whose user has SECURITY.md's store rules
// admits, writes (its scripts call TIME for the clock bound), reads and
// checks, and meets no refusal doing it; it cannot touch a lease's keys,
// another namespace's marks, or anything else.
func TestStoreACL(t *testing.T) {
	// Durable, so Check needs INFO alone; every channel by default, as Redis
	// 6.2 has it.
	s := redisacl.Start(t, "--appendonly", "yes", "--acl-pubsub-default", "allchannels")
	ctx := testCtx(t)
	c := s.User(t, redisacl.StoreUser, redisacl.Store(redisacl.StoreNamespace))
	store := fence.NewRedisStore(c, "orders", fence.RedisConfig{})
	now := time.Now().UnixMicro() // fences follow Redis TIME in microseconds

	t.Run("admit", func(t *testing.T) {
		require.NoError(t, store.Admit(ctx, "a", tk("a", now)))
		require.NoError(t, store.Admit(ctx, "a", tk("a", now)), "equal is admitted")
		require.ErrorIs(t, store.Admit(ctx, "a", tk("a", now-1)), fence.ErrStale)
	})

	t.Run("write and read", func(t *testing.T) {
		require.NoError(t, store.Write(ctx, "b", tk("b", now), []byte("v1")))
		require.ErrorIs(t, store.Write(ctx, "b", tk("b", now), []byte("v2")), fence.ErrStale)
		value, mark, err := store.Read(ctx, "b")
		require.NoError(t, err)
		assert.Equal(t, "v1", string(value))
		assert.Equal(t, now, mark)
	})

	t.Run("the clock bound reads TIME", func(t *testing.T) {
		// An hour ahead of the server's TIME: refused by the scripts' TIME
		// call, which runs under the store's ACL.
		ahead := now + time.Hour.Microseconds()
		require.ErrorIs(t, store.Write(ctx, "c", tk("c", ahead), []byte("v")), fence.ErrAhead)
		require.ErrorIs(t, store.Admit(ctx, "c", tk("c", ahead)), fence.ErrAhead)
		require.NoError(t, c.Eval(ctx, "return redis.call('TIME')", nil).Err())
	})

	t.Run("check", func(t *testing.T) {
		require.NoError(t, store.Check(ctx))
	})

	// Checked before the refusals below, which are the test's own doing.
	assert.Empty(t, s.Refusals(t, redisacl.StoreUser), "the store rules are all a store needs")

	t.Run("one resource", func(t *testing.T) {
		ns := redisacl.StoreNamespace
		rules := append(redisacl.Without(redisacl.Store(ns), "~"+ns+":*"), "~"+ns+":orders:*")
		c := s.User(t, "lockwatch-store-orders", rules)
		require.NoError(t, fence.NewRedisStore(c, "orders", fence.RedisConfig{}).Write(ctx, "e", tk("e", now), []byte("v")))
		redisacl.RequireRefused(t, fence.NewRedisStore(c, "invoices", fence.RedisConfig{}).Write(ctx, "e", tk("e", now), []byte("v")), "a write to another resource")
	})

	t.Run("no other keys", func(t *testing.T) {
		billing := fence.NewRedisStore(c, "orders", fence.RedisConfig{Namespace: "billing:fence"})
		redisacl.RequireRefused(t, billing.Write(ctx, "d", tk("d", now), []byte("v")), "a write in another namespace")
		redisacl.RequireRefused(t, billing.Admit(ctx, "d", tk("d", now)), "an admit in another namespace")
		_, _, err := billing.Read(ctx, "d")
		redisacl.RequireRefused(t, err, "a read in another namespace")

		// Nor by hand: not a lease's keys or channels, not even from a
		// script, which runs with the caller's ACL.
		lockKey := redisacl.LeaseNamespace + ":{0123456789abcdef0123456789abcdef}:l"
		redisacl.RequireRefused(t, c.Get(ctx, lockKey).Err(), "GET of a lock")
		redisacl.RequireRefused(t, c.Eval(ctx, "return redis.call('SET', KEYS[1], 'x')", []string{lockKey}).Err(), "a script naming a lock")
		redisacl.RequireRefused(t, c.Eval(ctx, "return redis.call('DEL', '"+lockKey+"')", nil).Err(), "a script deleting a lock it does not name")
		redisacl.RequireRefused(t, c.Eval(ctx, "return redis.call('SET', KEYS[1], 'x')", []string{aclKey}).Err(), "SET, which the store never calls")
		redisacl.RequireRefused(t, c.Publish(ctx, redisacl.LeaseNamespace+":{0123456789abcdef0123456789abcdef}:r", "").Err(), "PUBLISH on a release channel")
		redisacl.RequireRefused(t, c.ConfigGet(ctx, "masterauth").Err(), "CONFIG GET")
		// What an ACL cannot stop (SECURITY.md): the store's user sets any
		// mark of its namespace by hand.
		require.NoError(t, c.HSet(ctx, aclKey, "fence", "9").Err())
		require.NoError(t, s.Admin.Del(ctx, aclKey).Err())
		keys, err := s.Admin.Keys(ctx, "*").Result()
		require.NoError(t, err)
		assert.Len(t, keys, 3, "the marks of a, b and e, nothing else: %v", keys)
		for _, k := range keys {
			assert.True(t, strings.HasPrefix(k, redisacl.StoreNamespace+":orders:{"), k)
		}
	})
}

// TestStoreACLMissing: a store user missing one permission of the rules
// fails closed: the write or admit is refused with the server's ACL error
// and writes nothing, never taken for a stale token. Check on a server
// without an append-only file needs CONFIG GET, which the rules leave out:
// it fails saying so, not ErrNotDurable.
func TestStoreACLMissing(t *testing.T) {
	s := redisacl.Start(t) // redistest's servers keep nothing
	ctx := testCtx(t)
	ns := redisacl.StoreNamespace
	now := time.Now().UnixMicro()

	for i, drop := range []string{"+evalsha", "+eval", "+hset", "+time", "~" + ns + ":*"} {
		t.Run("no "+drop, func(t *testing.T) {
			user := "lockwatch-store-" + strconv.Itoa(i)
			c := s.User(t, user, redisacl.Without(redisacl.Store(ns), drop))
			store := fence.NewRedisStore(c, "orders", fence.RedisConfig{})
			key := "k-" + user
			// As after a restart: EVALSHA is answered NOSCRIPT, and the
			// store sends the body with EVAL.
			require.NoError(t, s.Admin.ScriptFlush(ctx).Err())
			write := store.Write(ctx, key, tk(key, now), []byte("v"))
			redisacl.RequireRefused(t, write, "a write without "+drop)
			require.NotErrorIs(t, write, fence.ErrStale, "a refusal is not a stale token: %v", write)
			_, mark, err := fence.NewRedisStore(s.Admin, "orders", fence.RedisConfig{}).Read(ctx, key)
			require.NoError(t, err)
			assert.Zero(t, mark, "nothing written")
			t.Logf("%s: %v", drop, write)
		})
	}

	t.Run("check without an append-only file", func(t *testing.T) {
		store := fence.NewRedisStore(s.User(t, redisacl.StoreUser, redisacl.Store(ns)), "orders", fence.RedisConfig{})
		err := store.Check(ctx)
		redisacl.RequireRefused(t, err, "CONFIG GET save")
		require.NotErrorIs(t, err, fence.ErrNotDurable, "%v", err)
		assert.Contains(t, err.Error(), "CONFIG GET save failed")
	})
}

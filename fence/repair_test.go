package fence_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redisacl"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// storeKey is the Redis key of a RedisStore's key with the default
// namespace, derived as keys.go documents it: what an operator finds with
// SCAN, and where these tests put a mark no lease could have set.
func storeKey(resource, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "lockwatch:fence:" + resource + ":{" + hex.EncodeToString(sum[:16]) + "}"
}

// repairs is the lockwatch.fence.repairs count of a resource.
func (h harness) repairs(t *testing.T, resource string) int64 {
	t.Helper()
	return h.Sum(t, obs.FenceRepairs, telemetrytest.Attrs(obs.AttrResource, resource))
}

// repairLogs counts the repairs logged.
func repairLogs(h harness) int {
	n := 0
	for _, r := range h.Logs.Records() {
		if strings.Contains(r.Message, "fence mark set back") {
			n++
		}
	}
	return n
}

// hget reads one field of a store key's hash ("" when absent).
func hget(t *testing.T, c redis.UniversalClient, rkey, field string) string {
	t.Helper()
	v, err := c.HGet(context.Background(), rkey, field).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(t, err)
	return v
}

// deadClient is a client of an address nothing listens on.
func deadClient(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisMicros is the server's TIME in microseconds.
func redisMicros(t *testing.T, c redis.UniversalClient) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	require.NoError(t, err)
	return now.UnixMicro()
}

// TestRepairSetsABrickedMarkBack: a mark that a token no lease carried
// moved far ahead of minting (written here as such a write leaves it) is
// set back to the newest minted fence or the store's clock plus its skew,
// whichever is later, once, counted and logged; and only while it is still
// the mark inspected. Leases acquired within the skew after it are still
// refused; those after, accepted.
func TestRepairSetsABrickedMarkBack(t *testing.T) {
	ctx := testCtx(t)
	client := redistest.Start(t).Client(t)
	h := newHarness(t)
	const skew = 50 * time.Millisecond
	s := fence.NewRedisStore(client, "ledger", fence.RedisConfig{MaxSkew: skew, Telemetry: h.Tel})
	rkey := storeKey("ledger", "acct-1")

	// A lease's fence is Redis TIME in microseconds; the bad token was
	// about four months ahead of it.
	minted := redisMicros(t, client)
	bricked := minted + 10_000_000_000_000
	require.NoError(t, client.HSet(ctx, rkey, "value", "a", "fence", strconv.FormatInt(bricked, 10), "write", "bad-write-id").Err())
	seen, err := s.Mark(ctx, "acct-1")
	require.NoError(t, err)
	assert.Equal(t, bricked, seen)
	assert.Zero(t, h.repairs(t, "ledger"), "the series exists before the first repair, at 0")

	// The mark moved since it was inspected: nothing changes.
	mark, repaired, err := s.Repair(ctx, "acct-1", bricked-1, minted)
	require.NoError(t, err)
	assert.False(t, repaired)
	assert.Equal(t, bricked, mark, "the mark as it is")

	mark, repaired, err = s.Repair(ctx, "acct-1", seen, minted)
	require.NoError(t, err)
	assert.True(t, repaired)
	after := redisMicros(t, client)
	assert.GreaterOrEqual(t, mark, minted+skew.Microseconds(), "at least the minted fence, and the clock plus the skew")
	assert.LessOrEqual(t, mark, after+skew.Microseconds(), "the store's clock at the repair plus the skew: no later")
	assert.Equal(t, strconv.FormatInt(mark, 10), hget(t, client, rkey, "fence"))
	assert.Empty(t, hget(t, client, rkey, "write"), "the id of the write that had set the mark is gone with it")
	assert.Equal(t, "a", hget(t, client, rkey, "value"), "the value is left as it is")
	assert.EqualValues(t, 1, h.repairs(t, "ledger"))
	level, attrs, ok := h.Logs.Find("fence mark set back")
	require.True(t, ok, "a repair is logged")
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, "ledger", attrs[obs.AttrResource])
	assert.Equal(t, strconv.FormatInt(bricked, 10), attrs[obs.AttrHighWater])
	assert.Equal(t, strconv.FormatInt(mark, 10), attrs[obs.AttrFence])
	assert.Len(t, attrs[obs.AttrKeyHash], 32)
	assert.NotContains(t, attrs, obs.AttrKey, "the raw key only with raw keys")

	// A lease minted within the skew is refused; once the clock has passed
	// the repaired mark, the next lease mints above it, and writes.
	require.ErrorIs(t, s.Write(ctx, "acct-1", tk("acct-1", redisMicros(t, client)), []byte("b")), fence.ErrStale)
	time.Sleep(time.Duration(mark-redisMicros(t, client))*time.Microsecond + time.Millisecond)
	require.NoError(t, s.Write(ctx, "acct-1", tk("acct-1", redisMicros(t, client)), []byte("b")))

	// Idempotent: a second repair of the mark first seen finds it moved.
	_, repaired, err = s.Repair(ctx, "acct-1", seen, minted)
	require.NoError(t, err)
	assert.False(t, repaired)
	assert.EqualValues(t, 1, h.repairs(t, "ledger"), "a repair that changed nothing is not counted")
	assert.Equal(t, 1, repairLogs(h), "nor logged")
}

// TestRepairLeavesAMarkNotAhead: a mark at or below the newest minted fence
// or the store's clock is never lowered, and a key without one gets none.
func TestRepairLeavesAMarkNotAhead(t *testing.T) {
	ctx := testCtx(t)
	client := redistest.Start(t).Client(t)
	h := newHarness(t)
	s := fence.NewRedisStore(client, "ledger", fence.RedisConfig{Telemetry: h.Tel})
	now := redisMicros(t, client)
	for _, tc := range []struct {
		name        string
		mark, floor int64
	}{
		{"below the clock, floor lower", now - 1000, 42},
		{"below the floor", now + 1_000_000_000, now + 2_000_000_000},
		{"equal to the floor", now + 1_000_000_000, now + 1_000_000_000},
		{"2^53 below 2^53+1, one double", 9007199254740992, 9007199254740993},
		{"max int64", 1<<63 - 1, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "below-" + tc.name
			require.NoError(t, client.HSet(ctx, storeKey("ledger", key), "fence", strconv.FormatInt(tc.mark, 10)).Err())
			mark, repaired, err := s.Repair(ctx, key, tc.mark, tc.floor)
			require.NoError(t, err)
			assert.False(t, repaired)
			assert.Equal(t, tc.mark, mark)
			assert.Equal(t, strconv.FormatInt(tc.mark, 10), hget(t, client, storeKey("ledger", key), "fence"), "untouched")
		})
	}
	mark, repaired, err := s.Repair(ctx, "never-written", 42, 42)
	require.NoError(t, err)
	assert.False(t, repaired)
	assert.Zero(t, mark, "no mark: it moved from the one seen")
	n, err := client.Exists(ctx, storeKey("ledger", "never-written")).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "no record is made for a key without one")
	assert.Zero(t, h.repairs(t, "ledger"), "nothing was set back")
	assert.Zero(t, repairLogs(h))
}

// TestRepairComparesExactly: marks and floors beyond the clock are compared
// as the write scripts compare them, exactly, not as Lua's doubles would.
func TestRepairComparesExactly(t *testing.T) {
	ctx := testCtx(t)
	client := redistest.Start(t).Client(t)
	h := newHarness(t)
	s := fence.NewRedisStore(client, "exact", fence.RedisConfig{Telemetry: h.Tel})
	for i, p := range [][2]int64{ // {mark, floor}: the mark is above, the floor above the clock
		{9007199254740993, 9007199254740992}, // 2^53+1 above 2^53: one double
		{1<<63 - 1, 1<<63 - 2},
		{10000000000000000, 9999999999999999}, // a string compare alone would get it wrong
	} {
		key := "exact-" + strconv.Itoa(i)
		require.NoError(t, client.HSet(ctx, storeKey("exact", key), "fence", strconv.FormatInt(p[0], 10)).Err())
		mark, repaired, err := s.Repair(ctx, key, p[0], p[1])
		require.NoError(t, err)
		assert.True(t, repaired, "%d over %d", p[0], p[1])
		assert.Equal(t, p[1], mark)
		assert.Equal(t, strconv.FormatInt(p[1], 10), hget(t, client, storeKey("exact", key), "fence"), "%d over %d", p[0], p[1])
	}
	assert.EqualValues(t, 3, h.repairs(t, "exact"))
}

// TestRepairRefusesMalformedInput: arguments that are not positive are
// refused before Redis is called; a stored mark that is not a canonical
// fence is refused by the script, and nothing changes either way.
func TestRepairRefusesMalformedInput(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	client := srv.Client(t)
	h := newHarness(t)
	s := fence.NewRedisStore(client, "ledger", fence.RedisConfig{Telemetry: h.Tel})
	rkey := storeKey("ledger", "acct-m")
	require.NoError(t, client.HSet(ctx, rkey, "fence", "500").Err())

	for _, n := range []int64{0, -1, -1 << 63} {
		_, _, err := s.Repair(ctx, "acct-m", 500, n)
		require.ErrorIs(t, err, fence.ErrMalformed, "floor %d", n)
		_, _, err = s.Repair(ctx, "acct-m", n, 7)
		require.ErrorIs(t, err, fence.ErrMalformed, "seen %d", n)
		assert.Contains(t, err.Error(), "must be positive")
	}
	// Refused before Redis is called: a store whose Redis is down says so.
	dead := fence.NewRedisStore(deadClient(t), "ledger", fence.RedisConfig{})
	_, _, err := dead.Repair(ctx, "acct-m", 500, 0)
	require.ErrorIs(t, err, fence.ErrMalformed, "refused before dialling")
	assert.Equal(t, "500", hget(t, client, rkey, "fence"))

	for _, stored := range []string{"0", "0500", "+500", " 500", "5e2", "-500", "", "99999999999999999999", "abc"} {
		require.NoError(t, client.HSet(ctx, rkey, "fence", stored).Err())
		_, repaired, err := s.Repair(ctx, "acct-m", 500, 7)
		require.Error(t, err, "stored %q", stored)
		assert.False(t, repaired)
		assert.True(t, strings.HasPrefix(err.Error(), "fence: repair ledger: "), "%q: %v", stored, err)
		assert.Contains(t, err.Error(), "stored fence is not canonical")
		assert.Equal(t, stored, hget(t, client, rkey, "fence"), "unchanged")
		_, err = s.Mark(ctx, "acct-m")
		require.Error(t, err, "Mark reads only canonical marks: %q", stored)
		assert.True(t, strings.HasPrefix(err.Error(), "fence: read ledger: "), "%q: %v", stored, err)
	}
	assert.Zero(t, h.repairs(t, "ledger"))

	// Redis failing is Redis's error, not the fence's.
	_, _, err = dead.Repair(ctx, "acct-m", 500, 7)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "repair ledger: "), "%v", err)
	require.NotErrorIs(t, err, fence.ErrMalformed)
	_, err = dead.Mark(ctx, "acct-m")
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "read ledger: "), "%v", err)
}

// TestRepairUnderTheStoreACL: a store whose user has SECURITY.md's store
// rules (internal/testenv/redisacl) reads and repairs its marks, and meets no
// refusal doing it: a service can call Repair with the store's own user.
func TestRepairUnderTheStoreACL(t *testing.T) {
	s := redisacl.Start(t)
	ctx := testCtx(t)
	store := fence.NewRedisStore(s.User(t, redisacl.StoreUser, redisacl.Store(redisacl.StoreNamespace)), "orders", fence.RedisConfig{})
	rkey := storeKey("orders", "k")
	require.NoError(t, s.Admin.HSet(ctx, rkey, "value", "v", "fence", "9000000000000000", "write", "bad-write-id").Err())

	seen, err := store.Mark(ctx, "k")
	require.NoError(t, err)
	assert.EqualValues(t, 9000000000000000, seen)
	mark, repaired, err := store.Repair(ctx, "k", seen, 42)
	require.NoError(t, err)
	assert.True(t, repaired)
	assert.Less(t, mark, seen)
	assert.Equal(t, strconv.FormatInt(mark, 10), hget(t, s.Admin, rkey, "fence"))
	assert.Empty(t, hget(t, s.Admin, rkey, "write"))
	assert.Empty(t, s.Refusals(t, redisacl.StoreUser), "the store rules are all a repair needs")
}

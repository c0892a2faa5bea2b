package fence_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// backend is a Redis deployment the store must work on unchanged.
type backend struct {
	name    string
	client  redis.UniversalClient
	cluster *redistest.Cluster // nil for a single node
}

// backends starts a single node and a 3-master cluster.
func backends(t *testing.T) []backend {
	redistest.Require(t)
	cl := redistest.StartCluster(t, 3)
	return []backend{
		{name: "single", client: redistest.Start(t).Client(t)},
		{name: "cluster", client: cl.Client(t), cluster: cl},
	}
}

func stale(t *testing.T, err error, token, highWater int64) {
	t.Helper()
	require.ErrorIs(t, err, fence.ErrStale)
	var se *fence.StaleError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, token, se.Token.Fence, "the write's token")
	assert.Equal(t, highWater, se.HighWater, "the mark")
}

// TestRedisStore runs every property of the store on a single node and on a
// cluster: the scripts touch one key each, so nothing may differ.
func TestRedisStore(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("WriteIsStrict", func(t *testing.T) { testWriteIsStrict(t, b) })
			t.Run("Admit", func(t *testing.T) { testAdmit(t, b) })
			t.Run("ExactComparison", func(t *testing.T) { testExactComparison(t, b) })
			t.Run("Values", func(t *testing.T) { testValues(t, b) })
			t.Run("Telemetry", func(t *testing.T) { testTelemetry(t, b) })
			t.Run("KeysSpread", func(t *testing.T) { testKeysSpread(t, b) })
			t.Run("Concurrent", func(t *testing.T) { testRedisConcurrent(t, b) })
		})
	}
}

func testWriteIsStrict(t *testing.T, b backend) {
	ctx := testCtx(t)
	h := newHarness(t)
	s := fence.NewRedisStore(b.client, "ledger", fence.RedisConfig{Telemetry: h.Tel})

	v, mark, err := s.Read(ctx, "acct-1")
	require.NoError(t, err)
	assert.Nil(t, v, "never written")
	assert.Zero(t, mark)

	require.NoError(t, s.Write(ctx, "acct-1", tk("acct-1", 10), []byte("a")), "first write")
	stale(t, s.Write(ctx, "acct-1", tk("acct-1", 10), []byte("b")), 10, 10)
	stale(t, s.Write(ctx, "acct-1", tk("acct-1", 10), []byte("b")), 10, 10) // and never later either
	stale(t, s.Write(ctx, "acct-1", tk("acct-1", 9), []byte("c")), 9, 10)
	v, mark, err = s.Read(ctx, "acct-1")
	require.NoError(t, err)
	assert.Equal(t, "a", string(v), "rejected writes leave the value")
	assert.Equal(t, int64(10), mark)

	require.NoError(t, s.Write(ctx, "acct-1", tk("acct-1", 11), []byte("d")))
	v, mark, err = s.Read(ctx, "acct-1")
	require.NoError(t, err)
	assert.Equal(t, "d", string(v), "value and mark written together")
	assert.Equal(t, int64(11), mark)

	require.NoError(t, s.Write(ctx, "acct-2", tk("acct-2", 3), []byte("x")), "marks are per key")

	var se *fence.StaleError
	require.ErrorAs(t, s.Write(ctx, "acct-1", tk("acct-1", 5), nil), &se)
	assert.Equal(t, "ledger", se.Resource)
	assert.Equal(t, counts{accepted: 3, rejected: 4, rejections: 4}, h.counts(t, "ledger"))
}

func testAdmit(t *testing.T, b backend) {
	ctx := testCtx(t)
	h := newHarness(t)
	s := fence.NewRedisStore(b.client, "api", fence.RedisConfig{Telemetry: h.Tel})

	require.NoError(t, s.Admit(ctx, "k", tk("k", 5)))
	require.NoError(t, s.Admit(ctx, "k", tk("k", 5)), "one lease, several requests")
	require.NoError(t, s.Admit(ctx, "k", tk("k", 6)))
	stale(t, s.Admit(ctx, "k", tk("k", 5)), 5, 6)
	v, mark, err := s.Read(ctx, "k")
	require.NoError(t, err)
	assert.Nil(t, v, "Admit stores no value")
	assert.Equal(t, int64(6), mark)

	stale(t, s.Write(ctx, "k", tk("k", 6), []byte("v")), 6, 6) // the mark is shared, and Write is strict
	require.NoError(t, s.Write(ctx, "k", tk("k", 7), []byte("v")))
	require.NoError(t, s.Admit(ctx, "k", tk("k", 7)))
	v, mark, err = s.Read(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "v", string(v), "Admit leaves the value alone")
	assert.Equal(t, int64(7), mark)
	assert.Equal(t, counts{accepted: 5, rejected: 2, rejections: 2}, h.counts(t, "api"))
}

// testExactComparison: tokens are int64 and the scripts must order all of
// them exactly, though Lua numbers are doubles (exact below 2^53 only).
// The tokens are signed: fences beyond any clock pass only so.
func testExactComparison(t *testing.T, b backend) {
	ctx := testCtx(t)
	s := fence.NewRedisStore(b.client, "exact", fence.RedisConfig{Secrets: signing, Telemetry: newHarness(t).Tel})
	const max = int64(1<<63 - 1)
	pairs := [][2]int64{
		{9007199254740992, 9007199254740993}, // 2^53 and 2^53+1: one double
		{9007199254740993, 9007199254740992},
		{9007199254740993, 9007199254740993},
		{max - 1, max}, {max, max - 1}, {max, max}, {1, max}, {max, 1},
		{999999999, 1000000000}, {1000000000, 999999999}, // a string compare alone would get these wrong
		{9, 10}, {10, 9}, {1, 1}, {1, 2},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		a := rng.Int64N(1<<62) + 1<<62
		d := rng.Int64N(5) - 2 // neighbours: equal, or one or two apart
		if a+d > 0 {
			pairs = append(pairs, [2]int64{a, a + d})
		}
		pairs = append(pairs, [2]int64{rng.Int64N(max) + 1, rng.Int64N(max) + 1})
	}
	for i, p := range pairs {
		first, second := p[0], p[1]
		wkey, akey := fmt.Sprintf("w%d", i), fmt.Sprintf("a%d", i)
		require.NoError(t, s.Write(ctx, wkey, signed(wkey, first), []byte(strconv.FormatInt(first, 10))))
		err := s.Write(ctx, wkey, signed(wkey, second), []byte(strconv.FormatInt(second, 10)))
		if second > first {
			require.NoError(t, err, "%d after %d", second, first)
		} else {
			stale(t, err, second, first)
		}
		_, mark, err := s.Read(ctx, wkey)
		require.NoError(t, err)
		assert.Equal(t, max2(first, second), mark, "%d then %d", first, second)

		require.NoError(t, s.Admit(ctx, akey, signed(akey, first)))
		err = s.Admit(ctx, akey, signed(akey, second))
		if second >= first {
			require.NoError(t, err, "admit %d after %d", second, first)
		} else {
			stale(t, err, second, first)
		}
	}
}

func max2(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func testValues(t *testing.T, b backend) {
	ctx := testCtx(t)
	s := fence.NewRedisStore(b.client, "blobs", fence.RedisConfig{Telemetry: newHarness(t).Tel})
	binary := []byte{0, 1, 2, 0xff, '{', '}', '\n'}
	for i, v := range [][]byte{binary, {}, nil, []byte("plain")} {
		key := strconv.Itoa(i)
		require.NoError(t, s.Write(ctx, key, tk(key, 1), v))
		got, _, err := s.Read(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, string(v), string(got))
		assert.NotNil(t, got, "a written empty value is not a missing one")
	}
	// Caller keys are untrusted: any bytes, any length, braces included.
	for _, key := range []string{"", "{x}", "}{", string(binary), string(make([]byte, 1<<16))} {
		require.NoError(t, s.Write(ctx, key, tk(key, 2), []byte(key)))
		got, mark, err := s.Read(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, key, string(got))
		assert.Equal(t, int64(2), mark)
	}
}

func testTelemetry(t *testing.T, b backend) {
	ctx := testCtx(t)
	h := newHarness(t)
	s := fence.NewRedisStore(b.client, "orders", fence.RedisConfig{Telemetry: h.Tel})
	rctx, request := h.Tracer.Start(ctx, "request")
	require.NoError(t, s.Write(rctx, "order-9", tk("order-9", 20), []byte("paid")))
	stale(t, s.Write(rctx, "order-9", tk("order-9", 19), []byte("pending")), 19, 20)
	request.End()

	assert.Equal(t, counts{accepted: 1, rejected: 1, rejections: 1}, h.counts(t, "orders"))
	assert.Contains(t, h.rejectionExemplars(t, "orders"), request.SpanContext().TraceID(), "the rejection links to the late writer's trace")
	level, attrs, ok := h.Logs.Find("stale write rejected")
	require.True(t, ok, "a rejection is logged")
	assert.Equal(t, slog.LevelWarn, level)
	assert.Equal(t, "20", attrs[obs.AttrHighWater])
	assert.Equal(t, request.SpanContext().TraceID().String(), attrs["trace_id"])

	spans := h.checkSpans()
	require.Len(t, spans, 2)
	for _, sp := range spans {
		assert.Equal(t, request.SpanContext().SpanID(), sp.Parent().SpanID(), "a child of the caller's span")
		assert.Contains(t, sp.Attributes(), attribute.String(obs.AttrResource, "orders"))
		var hash bool
		for _, kv := range sp.Attributes() {
			if kv.Key == obs.AttrKeyHash {
				hash = len(kv.Value.AsString()) == 32
			}
			assert.NotEqual(t, "order-9", kv.Value.String(), "the raw key never goes on a span")
		}
		assert.True(t, hash, "the key's hash identifies it")
		assert.Equal(t, codes.Unset, sp.Status().Code, "a rejection is the fence working, not an error")
	}
	rejected := spans[1]
	assert.Contains(t, rejected.Attributes(), attribute.String(obs.AttrResult, string(obs.FenceRejected)))
	assert.Contains(t, rejected.Attributes(), attribute.Int64(obs.AttrFence, 19))
	assert.Contains(t, rejected.Attributes(), attribute.Int64(obs.AttrHighWater, 20))
}

// testKeysSpread: the hash tag of the key's hash, not anything the caller
// chose, picks the slot, so keys spread over every shard.
func testKeysSpread(t *testing.T, b backend) {
	if b.cluster == nil {
		t.Skip("one node holds every key")
	}
	ctx := testCtx(t)
	s := fence.NewRedisStore(b.client, "spread", fence.RedisConfig{Telemetry: newHarness(t).Tel})
	for i := range 64 {
		key := "{same-tag}" + strconv.Itoa(i)
		require.NoError(t, s.Write(ctx, key, tk(key, 1), nil))
	}
	for _, n := range b.cluster.Nodes() {
		size, err := n.Do(ctx, "DBSIZE")
		require.NoError(t, err)
		assert.Positive(t, size, "shard %s holds some of 64 keys", n.Addr())
	}
}

// TestRedisKeyLayout: the record is one hash under
// <namespace>:<resource>:{<32 hex>}, with fields value, fence and write
// (the random id of the write that set the mark).
func TestRedisKeyLayout(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	client := redistest.Start(t).Client(t)
	s := fence.NewRedisStore(client, "ledger", fence.RedisConfig{Namespace: "app:fence", Telemetry: newHarness(t).Tel})
	require.NoError(t, s.Write(ctx, "{acct}:1", tk("{acct}:1", 42), []byte("v")))
	keys, err := client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.Regexp(t, `^app:fence:ledger:\{[0-9a-f]{32}\}$`, keys[0])
	fields, err := client.HGetAll(ctx, keys[0]).Result()
	require.NoError(t, err)
	assert.Regexp(t, `^[A-Z2-7]{26}$`, fields["write"], "128 random bits in base32")
	delete(fields, "write")
	assert.Equal(t, map[string]string{"value": "v", "fence": "42"}, fields)

	require.NoError(t, client.FlushAll(ctx).Err())
	def := fence.NewRedisStore(client, "ledger", fence.RedisConfig{Telemetry: newHarness(t).Tel})
	require.NoError(t, def.Admit(ctx, "{acct}:1", tk("{acct}:1", 7)))
	keys, err = client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.Regexp(t, `^lockwatch:fence:ledger:\{[0-9a-f]{32}\}$`, keys[0], "the default namespace, lockwatch:fence")
}

func TestNewRedisStorePanics(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	assert.PanicsWithValue(t, "fence: NewRedisStore: nil client", func() { fence.NewRedisStore(nil, "r", fence.RedisConfig{}) })
	for _, c := range []struct {
		resource string
		cfg      fence.RedisConfig
	}{
		{"", fence.RedisConfig{}},
		{"a{b}", fence.RedisConfig{}},
		{"with space", fence.RedisConfig{}},
		{string(make([]byte, 65)), fence.RedisConfig{}},
		{"ok", fence.RedisConfig{Namespace: "{tag}"}},
		{"ok", fence.RedisConfig{LockNamespace: "a b"}},
		{"ok", fence.RedisConfig{MaxSkew: -time.Second}},
		{"ok", fence.RedisConfig{PlainTokens: true, Secrets: signing}}, // a plain number cannot be signed
	} {
		assert.Panics(t, func() { fence.NewRedisStore(client, c.resource, c.cfg) }, "%q", c.resource)
	}
	assert.NotPanics(t, func() { fence.NewRedisStore(client, "orders-db/ledger", fence.RedisConfig{Namespace: "app:fence"}) })
}

// TestRedisErrors: a failing Redis is an error, wrapped, never a rejection,
// and not counted as a check; the span records it.
func TestRedisErrors(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	h := newHarness(t)
	srv := redistest.Start(t)
	client := srv.Client(t, func(o *redis.Options) { o.MaxRetries = -1 })
	s := fence.NewRedisStore(client, "down", fence.RedisConfig{Telemetry: h.Tel})

	// A record that is not lockwatch's: the scripts refuse to compare.
	require.NoError(t, s.Write(ctx, "k", tk("k", 1), nil))
	keys, err := client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.NoError(t, client.HSet(ctx, keys[0], "fence", "1e3").Err())
	err = s.Write(ctx, "k", tk("k", 2), nil)
	require.Error(t, err)
	require.NotErrorIs(t, err, fence.ErrStale)
	require.ErrorContains(t, err, "fence: write down:")
	require.ErrorContains(t, err, "not canonical")
	err = s.Admit(ctx, "k", tk("k", 2))
	require.Error(t, err)
	require.NotErrorIs(t, err, fence.ErrStale)
	_, _, err = s.Read(ctx, "k")
	require.ErrorIs(t, err, fence.ErrMalformed)

	require.NoError(t, srv.Stop())
	for op, f := range map[string]func() error{
		"write": func() error { return s.Write(ctx, "k", tk("k", 3), []byte("v")) },
		"admit": func() error { return s.Admit(ctx, "k", tk("k", 3)) },
		"read":  func() error { _, _, err := s.Read(ctx, "k"); return err },
	} {
		err := f()
		require.Error(t, err)
		require.NotErrorIs(t, err, fence.ErrStale)
		assert.True(t, strings.HasPrefix(err.Error(), op+" down: "), "Redis's error, not the fence's (\"fence:\"): %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = s.Write(cctx, "k", tk("k", 4), nil)
	require.ErrorIs(t, err, context.Canceled, "wrapped, so the cause is visible")
	assert.Equal(t, "write down: context canceled", err.Error())

	assert.Equal(t, counts{accepted: 1}, h.counts(t, "down"), "only the first write was a check")
	spans := h.checkSpans()
	require.Len(t, spans, 6)
	for _, sp := range spans[1:] {
		assert.Equal(t, codes.Error, sp.Status().Code)
	}
}

// TestInvalidTokens: what no lease mints is the caller's bug: an error
// before Redis is called, not a check.
func TestInvalidTokens(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	s := fence.NewRedisStore(client, "r", fence.RedisConfig{Telemetry: h.Tel})
	for _, n := range []int64{0, -1, -1 << 63} {
		require.ErrorIs(t, s.Write(ctx, "k", tk("k", n), nil), fence.ErrMalformed)
		require.ErrorIs(t, s.Admit(ctx, "k", tk("k", n)), fence.ErrMalformed)
		require.ErrorIs(t, s.Admit(ctx, "k", fence.Token{Fence: n}), fence.ErrMalformed)
	}
	assert.Equal(t, counts{}, h.counts(t, "r"))
	assert.Empty(t, h.checkSpans())
}

package lease

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// fencedStore is a real fenced store for the commit tests: a write of key
// with a token, and the value and mark stored.
type fencedStore struct {
	name  string
	write func(ctx context.Context, key string, token fence.Token, value string) error
	read  func(ctx context.Context, key string) (string, int64)
}

// fencedStores returns a fence.RedisStore and a PostgreSQL fence.Table,
// each recording its checks under resource "orders" in h and admitting the
// tokens of leases in lease namespace ns (the store's key, or row key, is
// the lock key).
func fencedStores(t *testing.T, client redis.UniversalClient, h *telemetrytest.Harness, ns string) []fencedStore {
	ctx := testCtx(t)
	rs := fence.NewRedisStore(client, "orders", fence.RedisConfig{Telemetry: h.Tel, LockNamespace: ns})
	db := pgtest.Open(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE orders (id text PRIMARY KEY, state text NOT NULL, last_fence bigint NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	orders, err := fence.NewPostgresTable(fence.TableConfig{Table: "orders", KeyColumn: "id", FenceColumn: "last_fence",
		Columns: []string{"state"}, Telemetry: h.Tel, LockNamespace: ns})
	require.NoError(t, err)
	return []fencedStore{
		{"redis",
			func(ctx context.Context, key string, token fence.Token, value string) error {
				return rs.Write(ctx, key, token, []byte(value))
			},
			func(ctx context.Context, key string) (string, int64) {
				v, mark, err := rs.Read(ctx, key)
				require.NoError(t, err)
				return string(v), mark
			}},
		{"postgres",
			func(ctx context.Context, key string, token fence.Token, value string) error {
				return orders.Upsert(ctx, db, key, token, value)
			},
			func(ctx context.Context, key string) (string, int64) {
				var v string
				var mark int64
				err := db.QueryRowContext(ctx, `SELECT state, last_fence FROM orders WHERE id = $1`, key).Scan(&v, &mark)
				if err == sql.ErrNoRows {
					return "", 0
				}
				require.NoError(t, err)
				return v, mark
			}},
	}
}

// TestCommitLateWriteReachesTheFence is the documented way to write (the
// lease's own context passed to Commit, as a middleware handler's request
// context is) for a holder whose lease is lost after Commit's check, while
// fn runs, and whose key a newer holder took and wrote meanwhile: the late
// write must reach the store and be rejected by its fence, counted as a
// fence rejection (what pages), not be cancelled on the client side where
// the fence never sees it.
func TestCommitLateWriteReachesTheFence(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t)
	client := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	h := telemetrytest.New(t)
	ns := testNamespace(t)
	for _, store := range fencedStores(t, client, h, ns) {
		t.Run(store.name, func(t *testing.T) {
			ctx := testCtx(t)
			lk := newLocker(t, client, Config{Namespace: ns, TTL: time.Second, Name: "orders", Telemetry: h.Tel})
			other := NewLocker(client, Config{Namespace: lk.set.Namespace, TTL: time.Second, Name: "orders", Telemetry: h.Tel})
			t.Cleanup(func() { _ = other.Close() })
			key := "order-" + store.name
			before := h.Sum(t, obs.FenceRejections, map[string]string{obs.AttrResource: "orders"})

			l, err := lk.Acquire(ctx, key)
			require.NoError(t, err)
			defer l.Release(ctx)
			err = l.Commit(l.Context(), func(wctx context.Context, token fence.Token) error {
				// A pause at the worst moment: after Commit's check, Redis
				// loses the key, the lease is lost, and a newer holder
				// takes the key and writes first.
				lockKey, _ := redisKeys(lk.set.Namespace, key)
				require.NoError(t, client.Del(ctx, lockKey).Err())
				require.Error(t, waitDone(t, l, 10*time.Second), "the lease is lost")
				next, err := other.Acquire(ctx, key)
				require.NoError(t, err)
				defer next.Release(ctx)
				require.Greater(t, next.Fence(), token.Fence)
				require.NoError(t, next.Commit(next.Context(), func(ctx context.Context, newer fence.Token) error {
					return store.write(ctx, key, newer, "paid by the newer holder")
				}))
				return store.write(wctx, key, token, "paid late")
			})
			require.ErrorIs(t, err, fence.ErrStale, "the late write reached the store and its fence rejected it: %v", err)
			assert.Equal(t, before+1, h.Sum(t, obs.FenceRejections, map[string]string{obs.AttrResource: "orders"}),
				"the rejection is counted: the stale-write page can fire")
			v, _ := store.read(ctx, key)
			assert.Equal(t, "paid by the newer holder", v)
		})
	}
}

// TestCommitResults: lockwatch_lease_commits_total says what became of each
// final write, once, after fn returned: a write that failed or that a
// fence rejected is not counted as committed.
func TestCommitResults(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	client := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	ttl := time.Second
	lk := newLocker(t, client, Config{Telemetry: h.Tel, Name: "orders", TTL: ttl})
	store := fence.NewRedisStore(client, "orders", fence.RedisConfig{Telemetry: h.Tel, LockNamespace: lk.set.Namespace})
	near := with(t, lk, Config{CommitHard: -1, CommitWarn: ttl})
	refusing := with(t, lk, Config{CommitHard: ttl, CommitWarn: ttl})
	acquire := func(lk *Locker, key string) *Lease {
		l, err := lk.Acquire(ctx, key)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Release(ctx) })
		return l
	}
	write := func(key string) func(context.Context, fence.Token) error {
		return func(ctx context.Context, token fence.Token) error { return store.Write(ctx, key, token, []byte("v")) }
	}

	ok := acquire(lk, "ok")
	require.NoError(t, ok.Commit(ctx, write("ok")))
	require.NoError(t, acquire(near, "near").Commit(ctx, write("near")))
	require.ErrorIs(t, acquire(refusing, "refused").Commit(ctx, write("refused")), ErrExpiring)
	require.ErrorIs(t, ok.Commit(ctx, write("ok")), fence.ErrStale, "the same token again: the fence refuses it")
	failure := errors.New("insert failed")
	require.ErrorIs(t, acquire(lk, "failed").Commit(ctx, func(context.Context, fence.Token) error { return failure }), failure)
	assert.PanicsWithValue(t, "boom", func() {
		_ = acquire(lk, "panics").Commit(ctx, func(context.Context, fence.Token) error { panic("boom") })
	})
	nearStale := acquire(near, "near-stale")
	newer := fence.Mint(lk.set.Namespace, "near-stale", nearStale.Fence()+1, nil) // a newer holder's
	require.NoError(t, store.Write(ctx, "near-stale", newer, []byte("newer")))
	require.ErrorIs(t, nearStale.Commit(ctx, write("near-stale")), fence.ErrStale, "a rejection below the warning threshold is stale")

	for result, want := range map[obs.CommitResult]int64{obs.CommitCommitted: 1, obs.CommitNearExpiry: 1, obs.CommitRefused: 1,
		obs.CommitStale: 2, obs.CommitFailed: 2} {
		assert.Equal(t, want, h.Sum(t, obs.LeaseCommits, lockAttrs("orders", obs.AttrResult, string(result))), result)
	}
	n, _ := h.Hist(t, obs.LeaseCommitRemaining, lockAttrs("orders"))
	assert.EqualValues(t, 7, n, "the validity left is recorded for every call")
}

// TestCommitContext: fn's context keeps the caller's values and drops its
// cancellation and deadline, whichever context the caller passes; it ends
// at the commit timeout only.
func TestCommitContext(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{TTL: time.Second})
	l, err := lk.Acquire(ctx, "ctx")
	require.NoError(t, err)
	defer l.Release(ctx)

	type key struct{}
	caller, cancel := context.WithTimeout(context.WithValue(ctx, key{}, "request"), time.Hour)
	cancel() // a client that went away before the write
	require.NoError(t, l.Commit(caller, func(wctx context.Context, _ fence.Token) error {
		assert.NoError(t, wctx.Err(), "the caller's cancellation does not reach the write")
		assert.Equal(t, "request", wctx.Value(key{}), "its values do")
		deadline, ok := wctx.Deadline()
		require.True(t, ok, "bounded")
		assert.WithinDuration(t, time.Now().Add(defaultCommitTimeout), deadline, 5*time.Second, "by the default commit timeout, not the caller's deadline")
		return nil
	}))

	shortLk := with(t, lk, Config{CommitTimeout: 50 * time.Millisecond})
	short, err := shortLk.Acquire(ctx, "short")
	require.NoError(t, err)
	defer short.Release(ctx)
	err = short.Commit(short.Context(), func(wctx context.Context, _ fence.Token) error {
		<-wctx.Done()
		return wctx.Err()
	})
	require.ErrorIs(t, err, context.DeadlineExceeded, "a write that does not finish ends at the commit timeout")

	huge, err := lk.With(Config{CommitTimeout: math.MaxInt64})
	require.NoError(t, err, "a longer timeout counts as forever")
	forever, err := huge.Acquire(ctx, "forever")
	require.NoError(t, err)
	defer forever.Release(ctx)
	require.NoError(t, forever.Commit(ctx, func(wctx context.Context, _ fence.Token) error {
		deadline, _ := wctx.Deadline()
		assert.Greater(t, time.Until(deadline), 99*365*24*time.Hour)
		return nil
	}))

	_, err = lk.With(Config{CommitTimeout: -time.Second})
	require.ErrorIs(t, err, errInvalid)
	require.ErrorContains(t, err, "commit timeout")
	assert.Equal(t, 50*time.Millisecond, with(t, shortLk, Config{CommitTimeout: 0}).set.CommitTimeout,
		"zero is no timeout: it leaves the Locker's")
}

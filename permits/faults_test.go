package permits_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// TestLostPermit: a permit whose lock disappears from Redis is lost: its
// context is cancelled with a *lease.LostError before anyone else could
// know it free, the loss is counted by reason, and the permit is taken
// again by the next Acquire with a greater fence.
func TestLostPermit(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	h := telemetrytest.New(t)
	lk := newLocker(t, c, lease.Config{Namespace: ns, TTL: 300 * time.Millisecond, Telemetry: h.Tel})
	s := newSemaphore(t, lk, "k", permits.Config{Limit: 1, Name: "jobs"})
	p, err := s.Acquire(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, c.Del(ctx, leasekeys.OfSlot(ns, "k", p.Index).Lock).Val())

	select {
	case <-p.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the permit's context outlived its lock")
	}
	var lost *lease.LostError
	require.ErrorAs(t, context.Cause(p.Context()), &lost)
	assert.Equal(t, lease.LossRenewalRejected, lost.Reason)
	h.EventuallySum(t, obs.PermitsLosses, telemetrytest.Attrs(obs.AttrSemaphore, "jobs", obs.AttrReason, string(lease.LossRenewalRejected)), 1)
	h.EventuallySum(t, obs.PermitsHeld, telemetrytest.Attrs(obs.AttrSemaphore, "jobs"), 0)
	require.ErrorIs(t, p.Release(ctx), lease.ErrNotHeld)
	assert.EqualValues(t, 1, h.Sum(t, obs.PermitsLosses, telemetrytest.Attrs(obs.AttrSemaphore, "jobs", obs.AttrReason, string(lease.LossRenewalRejected))), "counted once")

	q, err := s.Acquire(ctx)
	require.NoError(t, err)
	assert.Greater(t, q.Fence(), p.Fence())
	require.NoError(t, q.Release(ctx))
}

// loseReply makes the first script of c that runs on a permit lock of
// key's (prefix) look unanswered: it runs in Redis, and the caller gets
// an error, as when a connection drops after the send.
func loseReply(c *redis.Client, lockPrefix string) *atomic.Bool {
	fired := &atomic.Bool{}
	c.AddHook(hookFunc(func(cmds []redis.Cmder, send func() error) error {
		err := send()
		for _, cmd := range cmds {
			name := cmd.Name()
			if (name == "evalsha" || name == "eval") && err == nil && cmd.Err() == nil && onLock(cmd, lockPrefix) && fired.CompareAndSwap(false, true) {
				cmd.SetErr(errLost)
				if len(cmds) == 1 {
					return errLost // go-redis sets a command's error to its hooks'
				}
			}
		}
		return err
	}))
	return fired
}

var errLost = errors.New("test: reply lost")

// onLock reports whether a script call's keys include a name starting
// with prefix.
func onLock(cmd redis.Cmder, prefix string) bool {
	return slices.ContainsFunc(cmd.Args(), func(a any) bool {
		s, ok := a.(string)
		return ok && strings.HasPrefix(s, prefix)
	})
}

// TestUnknownAcquire: an attempt on the only permit whose reply is lost
// makes Acquire fail with lease.ErrUnknown, counted as unknown; the
// Locker cleans the permit up, and the next Acquire takes it.
func TestUnknownAcquire(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	h := telemetrytest.New(t)
	fired := loseReply(c, leasekeys.OfSlot(ns, "k", 0).Lock)
	s := newSemaphore(t, newLocker(t, c, lease.Config{Namespace: ns, TTL: 2 * time.Second, Telemetry: h.Tel}), "k",
		permits.Config{Limit: 1})
	_, err := s.Acquire(ctx)
	require.True(t, fired.Load())
	require.ErrorIs(t, err, lease.ErrUnknown)
	assert.EqualValues(t, 1, h.Sum(t, obs.PermitsAcquires, telemetrytest.Attrs(obs.AttrSemaphore, "k", obs.AttrResult, string(obs.AcquireUnknown))))
	eventuallySlots(t, c, ns, "k", 1, 0, 0)
	p, err := s.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, p.Release(ctx))
}

// TestUnknownThenNextPermit: with two permits free, an attempt whose reply
// is lost does not end the Acquire: it takes the other permit, and the
// unknown one is cleaned up, so one permit is held in the end.
func TestUnknownThenNextPermit(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	lock0 := leasekeys.OfSlot(ns, "k", 0).Lock
	fired := loseReply(c, lock0[:len(lock0)-1]) // either permit's
	s := newSemaphore(t, newLocker(t, c, lease.Config{Namespace: ns, TTL: 2 * time.Second}), "k", permits.Config{Limit: 2})
	p, err := s.Acquire(ctx)
	require.True(t, fired.Load())
	require.NoError(t, err)
	eventuallySlots(t, c, ns, "k", 2, 1, 0)
	held, _ := slots(t, c, ns, "k", 2)
	assert.True(t, held[p.Index])
	require.NoError(t, p.Release(ctx))
}

// hookFunc is a go-redis hook made of one function, called with the
// commands of every command or pipeline and the step that sends them.
type hookFunc func(cmds []redis.Cmder, send func() error) error

func (f hookFunc) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f hookFunc) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return f([]redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}
func (f hookFunc) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return f(cmds, func() error { return next(ctx, cmds) })
	}
}

// TestFencingPerPermit: at a fenced store keyed by Permit.Key, holders of
// two permits both write, a token of one permit is foreign to another's
// mark, and a holder of permit 0 whose permit was lost and taken again is
// rejected once the new holder wrote.
func TestFencingPerPermit(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	c := redistest.Start(t).Client(t, leaseClient)
	store := fence.NewRedisStore(c, "exports", fence.RedisConfig{LockNamespace: ns})
	lk := newLocker(t, c, lease.Config{Namespace: ns, TTL: 300 * time.Millisecond})
	s := newSemaphore(t, lk, "k", permits.Config{Limit: 2})
	a, err := s.Acquire(ctx)
	require.NoError(t, err)
	b, err := s.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, store.Write(ctx, a.Key(), a.Token(), []byte("a")), "both holders write")
	require.NoError(t, store.Write(ctx, b.Key(), b.Token(), []byte("b")))
	require.ErrorIs(t, store.Write(ctx, b.Key(), a.Token(), []byte("a")), fence.ErrForeign, "one mark per permit")

	require.EqualValues(t, 1, c.Del(ctx, leasekeys.OfSlot(ns, "k", a.Index).Lock).Val())
	<-a.Context().Done()
	var next *permits.Permit
	require.Eventually(t, func() bool {
		next, err = s.Acquire(ctx)
		return err == nil
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, a.Index, next.Index, "the lost permit is the free one")
	require.NoError(t, next.Commit(next.Context(), func(ctx context.Context, token fence.Token) error {
		return store.Write(ctx, next.Key(), token, []byte("next"))
	}))
	err = store.Write(ctx, a.Key(), a.Token(), []byte("late"))
	var stale *fence.StaleError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, next.Fence(), stale.HighWater)
	v, _, err := store.Read(ctx, a.Key())
	require.NoError(t, err)
	assert.Equal(t, "next", string(v))
	require.NoError(t, next.Release(ctx))
	require.NoError(t, b.Release(ctx))
}

// TestClusterOneSlot: every name of every permit of a key is in the key's
// own Redis Cluster slot, so one MGET reads the permits, and they are
// taken and released on a cluster.
func TestClusterOneSlot(t *testing.T) {
	ctx, ns := testCtx(t), testNamespace(t)
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t, func(o *redis.ClusterOptions) { o.ContextTimeoutEnabled = true })
	own := leasekeys.Of(ns, "k").Lock
	slot, err := c.ClusterKeySlot(ctx, own).Result()
	require.NoError(t, err)
	for i := range 8 {
		k := leasekeys.OfSlot(ns, "k", i)
		for _, name := range []string{k.Lock, k.Fence, k.Queue, k.Entries} {
			got, err := c.ClusterKeySlot(ctx, name).Result()
			require.NoError(t, err)
			require.Equal(t, slot, got, "%s", name)
		}
	}
	s := newSemaphore(t, newLocker(t, c, lease.Config{Namespace: ns}), "k", permits.Config{Limit: 8})
	var ps []*permits.Permit
	for range 8 {
		p, err := s.Acquire(ctx)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	_, err = s.Acquire(ctx)
	require.ErrorIs(t, err, lease.ErrNotAcquired)
	for _, p := range ps {
		require.NoError(t, p.Release(ctx))
	}
	eventuallySlots(t, c, ns, "k", 8, 0, 0)
}

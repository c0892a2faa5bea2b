package lease

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// replyFault injects faults into a client's acquire and release scripts.
type replyFault struct {
	dropAcquireReply   atomic.Bool // the acquire reaches Redis, its reply is lost
	failAcquireBefore  atomic.Bool // the acquire fails before it is sent
	failRelease        atomic.Bool // releases and clean-ups fail in transport
	errorReplyAfterRun atomic.Bool // the acquire runs, the client gets an error reply
	acquireSent        atomic.Int32
	resolveDelay       time.Duration // each release (and clean-up of an unknown acquire) starts this late
}

func (f *replyFault) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *replyFault) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch {
		case acquireScript.Runs(cmd) && f.failAcquireBefore.Load():
			cmd.SetErr(errTimeout)
			return errTimeout
		case (acquireScript.Runs(cmd) || refreshScript.Runs(cmd)) && f.dropAcquireReply.Load():
			if err := next(ctx, cmd); err != nil {
				return err
			}
			f.acquireSent.Add(1)
			cmd.SetErr(errTimeout)
			return errTimeout
		case acquireScript.Runs(cmd) && f.errorReplyAfterRun.Load():
			if err := next(ctx, cmd); err != nil {
				return err
			}
			cmd.SetErr(masterDown{})
			return masterDown{}
		case releaseScript.Runs(cmd) && f.resolveDelay > 0:
			time.Sleep(f.resolveDelay)
			if f.failRelease.Load() {
				cmd.SetErr(errTimeout)
				return errTimeout
			}
		case releaseScript.Runs(cmd) && f.failRelease.Load():
			cmd.SetErr(errTimeout)
			return errTimeout
		}
		return next(ctx, cmd)
	}
}
func (f *replyFault) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// masterDown is a Redis error reply, as a retried command may get.
type masterDown struct{}

func (masterDown) Error() string { return "MASTERDOWN Link with MASTER is down" }
func (masterDown) RedisError()   {}

func TestUnknownAcquire(t *testing.T) {
	bs := backends(t)
	cases := []struct {
		name  string
		setup func(f *replyFault)
		want  obs.ResolutionResult
		held  bool  // whether the key is still held after the clean-up
		cause error // the error behind the unknown result
	}{
		{"reply lost, then released", func(f *replyFault) { f.dropAcquireReply.Store(true) }, obs.ResolutionReleased, false, errTimeout},
		{"never sent, absent", func(f *replyFault) { f.failAcquireBefore.Store(true) }, obs.ResolutionAbsent, false, errTimeout},
		// go-redis retries: the first attempt ran, a retry got an error reply.
		// The error reply must not pass for a definite "not acquired".
		{"ran, then an error reply, released", func(f *replyFault) { f.errorReplyAfterRun.Store(true) }, obs.ResolutionReleased, false, masterDown{}},
		{"reply lost and release failing, unresolved", func(f *replyFault) {
			f.dropAcquireReply.Store(true)
			f.failRelease.Store(true)
		}, obs.ResolutionUnresolved, true, errTimeout},
	}
	for _, b := range bs {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				ctx := testCtx(t)
				c := b.client(t)
				fault := &replyFault{}
				c.AddHook(fault)
				tc.setup(fault)
				o, tel := observe(t)
				lk := newLocker(t, c, Config{Telemetry: tel})
				lockKey, _ := redisKeys(lk.set.Namespace, "k")

				ran := false
				l, err := lk.Acquire(ctx, "k")
				if err == nil {
					ran = true // the work would run here
					_ = l.Release(ctx)
				}
				require.ErrorIs(t, err, ErrUnknown)
				require.ErrorIs(t, err, tc.cause, "the cause is kept")
				var unknown *unknownError
				require.ErrorAs(t, err, &unknown)
				assert.False(t, ran, "the work must not run on an unknown acquire")

				assert.Equal(t, tc.want, o.waitResolution(t))
				assert.Equal(t, map[bool]int64{true: 1, false: 0}[tc.held], b.client(t).Exists(ctx, lockKey).Val())
				acquires := o.acquires()
				require.Len(t, acquires, 1)
				assert.Equal(t, string(obs.AcquireUnknown), telemetrytest.Attr(acquires[0], obs.AttrResult).AsString())
				// The clean-up is reported in the trace of the acquire of "k".
				assert.Equal(t, hashTag(lockKey), telemetrytest.Attr(acquires[0], obs.AttrKeyHash).AsString())
				resolution := o.Logs.All("unknown acquire cleaned up")[0]
				assert.Equal(t, acquires[0].SpanContext().SpanID().String(), resolution.Attrs["span_id"])
			})
		}
	}
}

// TestUnknownAcquireThroughProxy loses real replies on the wire: the acquire
// reaches Redis, the client times out. go-redis discards the timed-out
// connection, so the clean-up dials a new one, whose handshake reply is
// dropped too: the release never reaches Redis and the resolution is
// unresolved. The key stays held until its TTL runs out; another process's
// acquirer sees contention, never a second lock, and the Locker that made
// the lost acquire takes the key over from its own ended attempt.
func TestUnknownAcquireThroughProxy(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	o, tel := observe(t)
	ttl := 2 * time.Second
	lk := newLocker(t, c, Config{TTL: ttl, ReleaseTimeout: 300 * time.Millisecond, Telemetry: tel})
	warm, err := lk.Acquire(ctx, "warm") // loads the scripts through the proxy
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))

	proxy.Set(faultproxy.DropReplies)
	_, err = lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrUnknown)
	assert.Equal(t, obs.ResolutionUnresolved, o.waitResolution(t))

	direct := srv.Client(t)
	lockKey, _ := redisKeys(lk.set.Namespace, "k")
	pttl := direct.PTTL(ctx, lockKey).Val()
	assert.Positive(t, pttl, "the lost acquire did take the key")
	assert.LessOrEqual(t, pttl, ttl, "and it expires by its TTL")

	proxy.Set(faultproxy.Pass)
	other := newLocker(t, direct, Config{Namespace: lk.set.Namespace})
	_, err = other.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired, "the orphaned key blocks, it is never taken twice")
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err, "the Locker takes the key over from its own lost acquire")
	require.NoError(t, l.Release(ctx))
}

// TestLossBeforeExpiryWhenRedisStalls SIGSTOPs the redis-server that holds
// the key right after the acquire (on a single node, and the key's master in
// a 3-master cluster). The lease must be cancelled before the key could have
// expired in Redis: strictly before the acquire's send time + TTL on the
// monotonic clock.
func TestLossBeforeExpiryWhenRedisStalls(t *testing.T) {
	type target struct {
		client func(ctxBounds bool) redis.UniversalClient
		server func(c redis.UniversalClient, lockKey string) *redistest.Server
	}
	targets := map[string]func(t *testing.T) target{
		"single": func(t *testing.T) target {
			srv := redistest.Start(t)
			return target{
				client: func(b bool) redis.UniversalClient {
					return srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = b })
				},
				server: func(redis.UniversalClient, string) *redistest.Server { return srv },
			}
		},
		"cluster": func(t *testing.T) target {
			cluster := redistest.StartCluster(t, 3)
			return target{
				client: func(b bool) redis.UniversalClient {
					return cluster.Client(t, func(o *redis.ClusterOptions) { o.ContextTimeoutEnabled = b })
				},
				server: func(c redis.UniversalClient, lockKey string) *redistest.Server {
					master, err := c.(*redis.ClusterClient).MasterForKey(context.Background(), lockKey)
					require.NoError(t, err)
					for _, n := range cluster.Nodes() {
						if n.Addr() == master.Options().Addr {
							return n
						}
					}
					t.Fatalf("no node serves %s", master.Options().Addr)
					return nil
				},
			}
		},
	}
	for _, backend := range []string{"single", "cluster"} {
		tgt := targets[backend](t)
		for _, tc := range []struct {
			name      string
			ctxBounds bool // go-redis ContextTimeoutEnabled
			want      LossReason
		}{
			// The renewal's deadline ends the read: the renewal fails first.
			{"context deadline bounds the read", true, LossRenewalUnknown},
			// go-redis ignores the deadline and waits ReadTimeout (3s): the
			// cancel point comes first and ends the lease anyway.
			{"read outlives the deadline", false, LossDeadline},
		} {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				ctx := testCtx(t)
				c := tgt.client(tc.ctxBounds)
				o, tel := observe(t)
				ttl := time.Second
				lk := newLocker(t, c, Config{TTL: ttl, Telemetry: tel})
				l, err := lk.Acquire(ctx, "stall")
				require.NoError(t, err)
				lockKey, _ := redisKeys(lk.set.Namespace, "stall")
				srv := tgt.server(c, lockKey)
				require.NoError(t, srv.Pause())
				stalledAt := clock.Now()
				t.Cleanup(func() { _ = srv.Resume() })

				cause := waitDone(t, l, 5*time.Second)
				assert.Equal(t, tc.want, lossReason(t, cause))
				// The loss is logged just after the cancel: its instant bounds
				// the cancel from above.
				losses := o.waitLosses(t, 1)
				require.Len(t, losses, 1)
				lostAt := instant(losses[0])
				expiry := l.sentAt + ttl
				t.Logf("stalled at %v after the acquire was sent; lease cancelled %v before the key could expire",
					stalledAt-l.sentAt, expiry-lostAt)
				assert.Less(t, lostAt, expiry, "cancelled %v before the earliest expiry", expiry-lostAt)
				assert.GreaterOrEqual(t, expiry-lostAt, lk.set.SafetyMargin/2, "the work gets about the safety margin to stop")

				// Redis comes back: a lost lease stays lost, nothing renews it.
				require.NoError(t, srv.Resume())
				time.Sleep(2 * lk.set.renewEvery)
				require.ErrorIs(t, l.Err(), ErrLost)
				assert.Zero(t, l.Remaining())
				require.ErrorIs(t, l.Commit(ctx, func(context.Context, fence.Token) error { return nil }), ErrLost)
				assert.Len(t, o.Logs.All("lease lost"), 1)
				_ = l.Release(ctx)
			})
		}
	}
}

// TestFenceSurvivesRestartWithoutPersistence: kill -9 and an empty restart
// reset an INCR counter to 1; the fence stays above every earlier one.
func TestFenceSurvivesRestartWithoutPersistence(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{})
	last := acquireReleaseN(ctx, t, lk, "k", 5)
	require.NoError(t, srv.Kill())
	require.NoError(t, srv.Restart())
	_, fenceKey := redisKeys(lk.set.Namespace, "k")
	require.EqualValues(t, 0, c.Exists(ctx, fenceKey).Val(), "the restart lost the fence record")

	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.Greater(t, l.Fence(), last)
	require.NoError(t, l.Release(ctx))
}

// TestFenceSurvivesPromotionOfStaleReplica: the replica misses the last
// acquires, is promoted, and still mints a larger fence than any the old
// primary handed out.
func TestFenceSurvivesPromotionOfStaleReplica(t *testing.T) {
	ctx := testCtx(t)
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	require.NoError(t, replica.ReplicaOf(primary))
	ns := testNamespace(t)

	onPrimary := newLocker(t, primary.Client(t), Config{Namespace: ns})
	l, err := onPrimary.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	_, fenceKey := redisKeys(ns, "k")
	replicaClient := replica.Client(t)
	require.Eventually(t, func() bool {
		v, _ := recordFence(ctx, replicaClient, fenceKey)
		return v == l.Fence()
	}, 5*time.Second, 5*time.Millisecond, "replica never saw the first fence")

	require.NoError(t, replica.StopReplication())
	last := acquireReleaseN(ctx, t, onPrimary, "k", 5)
	stale, err := recordFence(ctx, replicaClient, fenceKey)
	require.NoError(t, err)
	require.Less(t, stale, last, "the replica must have missed the last acquires")

	require.NoError(t, replica.Promote())
	onReplica := newLocker(t, replicaClient, Config{Namespace: ns})
	l, err = onReplica.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.Greater(t, l.Fence(), last, "stale record %d + 1 would not do; the fence must pass %d", stale, last)
	require.NoError(t, l.Release(ctx))
}

func TestReplicationAck(t *testing.T) {
	ctx := testCtx(t)
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	require.NoError(t, replica.ReplicaOf(primary))
	o, tel := observe(t)
	lk := newLocker(t, primary.Client(t), Config{ReplicationAcks: 1, ReplicationTimeout: 300 * time.Millisecond, Telemetry: tel})

	l, err := lk.Acquire(ctx, "acked")
	require.NoError(t, err, "one replica is connected and acknowledges")
	require.NoError(t, l.Release(ctx))

	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	_, err = lk.Acquire(ctx, "unacked")
	require.ErrorIs(t, err, ErrUnknown, "too few acknowledgements is an unknown acquire")
	assert.Contains(t, err.Error(), "0 of 1 replicas")
	assert.Equal(t, obs.ResolutionReleased, o.waitResolution(t), "the unacknowledged lock is released")
}

// TestClusterReplicationAckGoesToTheKeysMaster: WAIT takes no key, so on a
// cluster it must be sent to the master of the lock's slot. One master has a
// replica: acquires of keys on that master are acknowledged, acquires of keys
// elsewhere are not. Sent to a random node, WAIT would answer wrongly for
// about two keys in three.
func TestClusterReplicationAckGoesToTheKeysMaster(t *testing.T) {
	ctx := testCtx(t)
	cluster := redistest.StartCluster(t, 3)
	c := cluster.Client(t)
	lk := newLocker(t, c, Config{ReplicationAcks: 1, ReplicationTimeout: 200 * time.Millisecond})
	masterOf := func(key string) string {
		lockKey, _ := redisKeys(lk.set.Namespace, key)
		m, err := c.MasterForKey(ctx, lockKey)
		require.NoError(t, err)
		return m.Options().Addr
	}
	replicated := cluster.Nodes()[0]
	cluster.AddReplica(t, replicated)

	var on, off int
	for i := 0; on < 5 || off < 5; i++ {
		key := "k" + strconv.Itoa(i)
		l, err := lk.Acquire(ctx, key)
		if masterOf(key) == replicated.Addr() {
			on++
			require.NoError(t, err, "key %s lives on the replicated master", key)
			require.NoError(t, l.Release(ctx))
		} else {
			off++
			require.ErrorIs(t, err, ErrUnknown, "key %s lives on a master without replicas", key)
			assert.Contains(t, err.Error(), "0 of 1 replicas")
		}
	}
}

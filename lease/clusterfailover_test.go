package lease

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestClusterFailover kills, with SIGKILL, the master of a held lease's
// slot on a 3-master Redis Cluster and lets its replica take over (the
// cluster decides, after its node timeout of 2 s). lockwatch must follow:
// go-redis reloads its slot map only on MOVED or ASK, which a dead master
// never sends, or after ClusterStateReloadInterval (60 s by default), so
// lockwatch asks for a reload when a round trip gets no reply
// (script.FollowFailover); without it every acquire of those slots stays
// unknown for a minute. The lease's acquire was
// acknowledged by that replica, so its key is on the new master: a second
// Locker waiting for the key takes it only after the first lease ended,
// with a larger fence. Keys on the other masters are taken all through the
// failover: each master has a group-commit lane of its own, so a dead
// master holds up only its own keys.
func TestClusterFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster := redistest.StartCluster(t, 3)
	c := cluster.Client(t)
	ns := testNamespace(t)
	holder := newLocker(t, c, Config{Namespace: ns, TTL: 3 * time.Second})
	other := newLocker(t, cluster.Client(t), Config{Namespace: ns, TTL: 3 * time.Second})
	masterOf := func(key string) string {
		lockKey, _ := redisKeys(ns, key)
		m, err := c.MasterForKey(ctx, lockKey)
		require.NoError(t, err)
		return m.Options().Addr
	}
	doomed := cluster.Nodes()[0]
	replica := cluster.AddReplica(t, doomed)
	var onDoomed []string // keys on the doomed master
	var elsewhere string  // a key on another
	for i := 0; len(onDoomed) < 2 || elsewhere == ""; i++ {
		key := "k" + strconv.Itoa(i)
		if masterOf(key) == doomed.Addr() {
			onDoomed = append(onDoomed, key)
		} else {
			elsewhere = key
		}
	}
	held, probe := onDoomed[0], onDoomed[1]

	first, err := with(t, holder, Config{ReplicationAcks: 1, ReplicationTimeout: 500 * time.Millisecond}).Acquire(ctx, held)
	require.NoError(t, err)
	killed := time.Now()
	require.NoError(t, doomed.Kill())
	h := watchHandover(ctx, first, other)

	// The other masters serve their keys while the doomed one is down.
	for range 5 {
		l, err := other.Acquire(ctx, elsewhere)
		require.NoError(t, err, "a key on a live master during the failover")
		require.NoError(t, l.Release(ctx))
	}

	// The replica takes over on its own; the client follows once its
	// requests to the dead master fail (go-redis reloads the slot map).
	for {
		l, err := other.Acquire(ctx, probe)
		if err == nil {
			require.NoError(t, l.Release(ctx))
			break
		}
		require.NoError(t, ctx.Err(), "no acquire on the doomed master's slots: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("SIGKILL of the master to an acquire on its slots: %v", time.Since(killed).Round(time.Millisecond))
	probeKey, _ := redisKeys(ns, probe)
	// A client that loads the slot map now, from the promoted replica:
	// cluster.Client would ping every master it started with, the dead
	// one included, and fail on it whenever a node's map still names it.
	fresh := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{replica.Addr()}})
	defer fresh.Close()
	m, err := fresh.MasterForKey(ctx, probeKey)
	require.NoError(t, err)
	assert.Equal(t, replica.Addr(), m.Options().Addr, "the replica took the slots over")

	h.check(ctx, t)
}

// TestClusterTakeoverKeepsTheLease: CLUSTER FAILOVER TAKEOVER (the replica
// takes its master's slots without asking anyone) sent to the replica of
// a held lease's master while the master is alive. The lease's acquire was
// acknowledged by that replica, so its key is on the new master: the lease
// is renewed there (the old master answers MOVED) and never lost, and its
// Release deletes the key there.
func TestClusterTakeoverKeepsTheLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster := redistest.StartCluster(t, 3)
	c := cluster.Client(t)
	const ttl = 2 * time.Second
	lk := newLocker(t, c, Config{TTL: ttl})
	master := cluster.Nodes()[0]
	replica := cluster.AddReplica(t, master)
	var key string
	for i := 0; key == ""; i++ {
		lockKey, _ := redisKeys(lk.set.Namespace, "k"+strconv.Itoa(i))
		if m, err := c.MasterForKey(ctx, lockKey); err == nil && m.Options().Addr == master.Addr() {
			key = "k" + strconv.Itoa(i)
		}
	}
	l, err := with(t, lk, Config{ReplicationAcks: 1, ReplicationTimeout: 500 * time.Millisecond}).Acquire(ctx, key)
	require.NoError(t, err)

	_, err = replica.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER")
	require.NoError(t, err)
	for {
		role, err := replica.Do(ctx, "ROLE")
		if r, ok := role.([]any); err == nil && ok && len(r) > 0 && r[0] == "master" {
			break
		}
		require.NoError(t, ctx.Err(), "the replica never became master")
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * ttl) // several renewals on the new master
	require.NoError(t, l.Err(), "the lease outlived the takeover")
	require.NoError(t, l.Release(ctx), "the release deleted the key on the new master")
}

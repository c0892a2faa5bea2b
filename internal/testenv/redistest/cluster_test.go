package redistest_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

func TestClusterRoutesKeysAcrossMasters(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	ctx := testContext(t)
	require.Len(t, cluster.Nodes(), 3)
	require.Len(t, cluster.Addrs(), 3)
	c := cluster.Client(t)

	const keys = 100
	for i := range keys {
		require.NoError(t, c.Set(ctx, fmt.Sprintf("key-%d", i), i, 0).Err())
	}
	for i := range keys {
		v, err := c.Get(ctx, fmt.Sprintf("key-%d", i)).Int()
		require.NoError(t, err)
		assert.Equal(t, i, v)
	}

	// Every node must own some of the keys, or the client was not routing.
	total := int64(0)
	for _, n := range cluster.Nodes() {
		reply, err := n.Do(ctx, "DBSIZE")
		require.NoError(t, err)
		size, ok := reply.(int64)
		require.True(t, ok, "DBSIZE reply %T", reply)
		assert.Positive(t, size, "node %s holds no keys", n.Addr())
		total += size
	}
	assert.EqualValues(t, keys, total)
}

func TestClusterOfOne(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 1)
	ctx := testContext(t)
	c := cluster.Client(t)
	require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
	require.NoError(t, c.Set(ctx, "b", "2", 0).Err())
}

func TestClusterAddReplica(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	ctx := testContext(t)
	masters := cluster.Nodes()

	const key = "replicated"
	owner := ownerOf(ctx, t, cluster, key)
	replica := cluster.AddReplica(t, owner)
	assert.Equal(t, masters, cluster.Nodes(), "Nodes stays the masters")
	assert.Len(t, cluster.Addrs(), 3)
	assert.NotContains(t, cluster.Addrs(), replica.Addr())

	// Sent together, so the replica has had no time to catch up on its own.
	pipe := owner.Client(t).Pipeline()
	set := pipe.Set(ctx, key, "1", 0)
	wait := pipe.Do(ctx, "WAIT", 1, 500)
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, set.Err())
	acked, err := wait.Int64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, acked, "the replica acknowledges the write at once")
	size, err := replica.Do(ctx, "DBSIZE")
	require.NoError(t, err)
	assert.EqualValues(t, 1, size, "the acknowledged write is on the replica")

	for _, m := range masters {
		if m == owner {
			continue
		}
		acked, err := m.Client(t).Do(ctx, "WAIT", 1, 100).Int64()
		require.NoError(t, err)
		assert.Zero(t, acked, "master %s has no replica", m.Addr())

		// Every node knows the replica as the owner's.
		reply, err := m.Client(t).ClusterNodes(ctx).Result()
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^[0-9a-f]{40} `+regexp.QuoteMeta(replica.Addr())+`@\d+ slave [0-9a-f]{40} `, reply)
	}

	// A client made after AddReplica routes to every master, never to the
	// replica.
	c := cluster.Client(t)
	const keys = 100
	for i := range keys {
		require.NoError(t, c.Set(ctx, fmt.Sprintf("key-%d", i), i, 0).Err())
	}
	total := int64(0)
	for _, n := range masters {
		size, err := n.Client(t).DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Positive(t, size, "master %s holds no keys", n.Addr())
		total += size
	}
	assert.EqualValues(t, keys+1, total)
	v, err := c.Get(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, "1", v)
}

func TestClusterAddReplicaOfNonMemberFails(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 1)
	rec := &fatalTB{TB: t}
	assert.Nil(t, cluster.AddReplica(rec, redistest.Start(t)))
	assert.Contains(t, rec.msg, "not a master of this cluster")
}

// ownerOf returns the master that owns key's slot.
func ownerOf(ctx context.Context, t *testing.T, cluster *redistest.Cluster, key string) *redistest.Server {
	t.Helper()
	m, err := cluster.Client(t).MasterForKey(ctx, key)
	require.NoError(t, err)
	for _, n := range cluster.Nodes() {
		if n.Addr() == m.Options().Addr {
			return n
		}
	}
	t.Fatalf("no master has the address %s of the owner of %q", m.Options().Addr, key)
	return nil
}

package redistest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/redistest"
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

package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// Check refuses a server that could evict a held lock, and passes the
// deployments the tests run on (a single node, every master of a Cluster).
func TestCheck(t *testing.T) {
	ctx := testCtx(t)
	for _, b := range backends(t) {
		require.NoError(t, newLocker(t, b.client(t), Config{}).Check(ctx), b.name)
	}
	evicting := redistest.Start(t, "--maxmemory-policy", "volatile-lru")
	err := newLocker(t, evicting.Client(t), Config{}).Check(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "volatile-lru")
}

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{"7.0.15": true, "5.0.0": true, "10.2.1": true, "4.0.14": false, "3.2.12": false, "": false, "x.y": false} {
		assert.Equal(t, ok, checkVersion(v) == nil, v)
	}
}

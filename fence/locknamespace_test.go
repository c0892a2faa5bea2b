package fence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestLockNamespaceMismatch: RedisConfig's doc. A store whose LockNamespace
// is not the holders' lease namespace refuses every token of theirs as
// foreign, counted so, writes nothing, and says which namespace it expected
// and which setting that is; with the holders' namespace it accepts them.
// Plain tokens carry no scope, so the setting does not apply to them.
func TestLockNamespaceMismatch(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	h := newHarness(t)
	client := redistest.Start(t).Client(t)
	now := time.Now().UnixMicro()
	holders := fence.Mint("app", "order:7", now, nil) // a Locker of lease.Config{Namespace: "app"}

	wrong := fence.NewRedisStore(client, "orders", fence.RedisConfig{Telemetry: h.Tel}) // LockNamespace left at its default
	err := wrong.Write(ctx, "order:7", holders, []byte("v"))
	require.ErrorIs(t, err, fence.ErrForeign)
	assert.Contains(t, err.Error(), `lease namespace "lockwatch" (the store's LockNamespace`)
	assert.Equal(t, int64(1), refusedCounts(t, h, "orders")[obs.FenceForeign])
	_, mark, err := wrong.Read(ctx, "order:7")
	require.NoError(t, err)
	assert.Zero(t, mark, "nothing written")

	right := fence.NewRedisStore(client, "orders", fence.RedisConfig{LockNamespace: "app", Telemetry: h.Tel})
	require.NoError(t, right.Write(ctx, "order:7", holders, []byte("v")))

	plain := fence.NewRedisStore(client, "plain", fence.RedisConfig{LockNamespace: "other", PlainTokens: true, Telemetry: h.Tel})
	require.NoError(t, plain.Write(ctx, "order:7", fence.Token{Fence: now}, []byte("v")))
}

package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/lease"
)

// A key whose holder's Locker has a lease.Config.Replica: inspect names
// the replica beside the holder's hash, and run's refusal names it; no
// output has any of the holder's owner token.
func TestInspectAndRunNameTheHoldersReplica(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := redis.NewClient(&redis.Options{Addr: sharedAddr})
	t.Cleanup(func() { _ = client.Close() })
	lk := lease.NewLocker(client, lease.Config{Replica: "pod-a"})
	t.Cleanup(func() { _ = lk.Close() })
	l, err := lk.Acquire(ctx, "replica-held")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()
	token := client.Get(ctx, leasekeys.Of(defaultNamespace, "replica-held").Lock).Val()
	random, _, found := strings.Cut(token, "@pod-a")
	require.True(t, found, "the lock holds the token and the replica: %q", token)

	info := inspectJSON(t, "--redis", sharedAddr, "--key", "replica-held")
	assert.Equal(t, "pod-a", info.HolderReplica)
	assert.NotEmpty(t, info.Holder)
	code, stdout, stderr := lockwatchRun(t, "inspect", "--redis", sharedAddr, "--key", "replica-held")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "held:      yes, by holder "+info.Holder+" on replica pod-a\n")
	assert.NotContains(t, stdout+stderr, random)

	code, stdout, stderr = lockwatchRun(t, "run", "--redis", sharedAddr, "--key", "replica-held", "--", "/bin/true")
	assert.Equal(t, exitHeld, code, stderr)
	assert.Contains(t, stderr, "replica-held is held by replica pod-a for ")
	assert.NotContains(t, stdout+stderr, random)

	require.NoError(t, l.Release(ctx))
	free := inspectJSON(t, "--redis", sharedAddr, "--key", "replica-held")
	assert.False(t, free.Held)
	assert.Empty(t, free.HolderReplica, "a free key names no replica")
}

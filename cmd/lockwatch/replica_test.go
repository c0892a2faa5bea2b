package main

import (
	"os"
	"path/filepath"
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

// run --replica and elect --replica name the process holding the key: a
// run refused on it says which replica holds it, and inspect shows the
// name. The refused run's key is free again once the holder is done.
func TestReplicaFlagNamesTheHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, _ := holder(t, dir, []string{"--redis", sharedAddr}, "replica-flag-run", "--replica", "a")
	code, stdout, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", "replica-flag-run", "--", "/bin/true")
	assert.Equal(t, exitHeld, code, stderr)
	assert.Empty(t, stdout)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "replica-flag-run is held by replica a for ")
	assert.Equal(t, "a", inspectJSON(t, "--redis", sharedAddr, "--key", "replica-flag-run").HolderReplica)
	assert.Equal(t, exitOK, stop(t, dir, h), h.stderr.String())

	const key = "replica-flag-elect"
	edir := t.TempDir()
	c := candidateOf(t, edir, "b", nil, "--redis", sharedAddr, "--key", key, "--replica", "leader-b")
	waitEvents(t, edir, 0, c)
	code, _, stderr = lockwatchRun(t, "run", "--redis", sharedAddr, "--key", key, "--", "/bin/true")
	assert.Equal(t, exitHeld, code, stderr)
	assert.Contains(t, stderr, key+" is held by replica leader-b for ")
	assert.Equal(t, "leader-b", inspectJSON(t, "--redis", sharedAddr, "--key", key).HolderReplica)
	require.NoError(t, os.WriteFile(filepath.Join(edir, "exit.b"), nil, 0o644))
	assert.Equal(t, exitOK, c.wait(t), c.stderr.String())
}

// A --replica that lease.Config.Replica refuses is a usage error of run
// and elect, and nothing is taken; both commands' help shows the flag.
func TestBadReplicaFlagExits64(t *testing.T) {
	t.Parallel()
	r := "--redis=" + sharedAddr
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run space", []string{"run", r, "--key", "replica-bad", "--replica", "pod a", "--", "true"}, `replica name "pod a": byte 3`},
		{"run at", []string{"run", r, "--key", "replica-bad", "--replica", "a@b", "--", "true"}, `replica name "a@b"`},
		{"run too long", []string{"run", r, "--key", "replica-bad", "--replica", strings.Repeat("r", 65), "--", "true"}, "at most 64 bytes, got 65"},
		{"elect slash", []string{"elect", r, "--key", "replica-bad", "--replica", "a/b", "--", "true"}, `replica name "a/b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := lockwatchRun(t, tc.args...)
			assert.Equal(t, exitUsage, code, "stderr: %s", stderr)
			assert.Empty(t, stdout)
			assertOneLine(t, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Contains(t, stderr, "(see lockwatch "+tc.args[0]+" -h)")
		})
	}
	assert.False(t, inspectUnseen(t, "--redis", sharedAddr, "--key", "replica-bad").Held)
	for _, cmd := range []string{"run", "elect"} {
		code, stdout, stderr := lockwatchRun(t, cmd, "-h")
		require.Equal(t, exitOK, code, stderr)
		assert.Contains(t, stdout, "[--replica NAME]", cmd)
		assert.Contains(t, stdout, "-replica NAME\n", cmd)
		assert.Contains(t, stdout, `"K is held by replica NAME"`, cmd)
	}
}

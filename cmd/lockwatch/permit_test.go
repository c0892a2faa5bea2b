package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/permits"
)

// permitScript writes what the program got, "$LOCKWATCH_KEY
// $LOCKWATCH_PERMIT $LOCKWATCH_FENCE $LOCKWATCH_FENCE_TOKEN", to $DIR/env,
// and records its TERM trap and runs as holderScript does.
const permitScript = `trap 'date +%s%N > "$DIR/term"; exit 0' TERM
echo "$LOCKWATCH_KEY $LOCKWATCH_PERMIT $LOCKWATCH_FENCE $LOCKWATCH_FENCE_TOKEN" > "$DIR/env.tmp"; mv "$DIR/env.tmp" "$DIR/env"
i=0
while [ ! -e "$DIR/stop" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`

// permitEnv is what a program under a permit got.
type permitEnv struct {
	key   string
	index int
	fence int64
	token fence.Token
}

// permitHolder starts lockwatch run --permits n on key with permitScript
// in a directory of its own, and waits until the program runs.
func permitHolder(t *testing.T, addr, key string, n int, flags ...string) (*proc, string, permitEnv) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"run", "--redis", addr, "--key", key, "--permits", strconv.Itoa(n)}, flags...)
	p := startEnv(t, []string{"DIR=" + dir}, append(args, "--", "/bin/sh", "-c", permitScript)...)
	return p, dir, readPermitEnv(t, waitFile(t, filepath.Join(dir, "env"), p))
}

func readPermitEnv(t *testing.T, line string) permitEnv {
	t.Helper()
	f := strings.Fields(line)
	require.Len(t, f, 4, "the program's environment: %q", line)
	var e permitEnv
	var err error
	e.key = f[0]
	e.index, err = strconv.Atoi(f[1])
	require.NoError(t, err, "LOCKWATCH_PERMIT %q", f[1])
	e.fence, err = strconv.ParseInt(f[2], 10, 64)
	require.NoError(t, err, "LOCKWATCH_FENCE %q", f[2])
	e.token, err = fence.Parse(f[3])
	require.NoError(t, err, "LOCKWATCH_FENCE_TOKEN %q", f[3])
	return e
}

// slotFence is the newest fence minted for permit i of key, from its
// fence record in Redis.
func slotFence(t *testing.T, client *redis.Client, key string, i int) int64 {
	t.Helper()
	text, err := client.Get(testContext(t), leasekeys.OfSlot(defaultNamespace, key, i).Fence).Result()
	require.NoError(t, err)
	rec, err := leasekeys.ParseRecord(text)
	require.NoError(t, err)
	return rec.Fence
}

// TestPermitsRunNAtOnce: N runs with --permits N all run at once, each
// under a permit of its own whose key, fence and token its program gets;
// the next run exits 75 without running its program, and with --wait it
// runs on the permit that a finished run released.
func TestPermitsRunNAtOnce(t *testing.T) {
	t.Parallel()
	const key, n = "permits-n", 3
	client := redis.NewClient(&redis.Options{Addr: sharedAddr})
	t.Cleanup(func() { _ = client.Close() })

	procs, dirs, envs := make([]*proc, n), make([]string, n), make([]permitEnv, n)
	seen := map[int]bool{}
	for i := range n {
		procs[i], dirs[i], envs[i] = permitHolder(t, sharedAddr, key, n)
		e := envs[i]
		assert.False(t, seen[e.index], "permit %d is held twice", e.index)
		seen[e.index] = true
		assert.Equal(t, permits.Key(key, e.index), e.key, "LOCKWATCH_KEY is not the permit's key")
		assert.Equal(t, e.fence, e.token.Fence, "the token's fence is LOCKWATCH_FENCE")
		assert.Equal(t, fence.ScopeOf(defaultNamespace, e.key), e.token.Scope, "the token is not scoped to the permit")
		assert.Equal(t, slotFence(t, client, key, e.index), e.fence, "LOCKWATCH_FENCE is not the permit's fence")
	}
	assert.Len(t, seen, n)

	marker := filepath.Join(t.TempDir(), "ran")
	code, _, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", key, "--permits", strconv.Itoa(n),
		"--", "/bin/sh", "-c", "touch "+marker)
	assert.Equal(t, exitHeld, code, stderr)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "all 3 permits are held")
	assert.NoFileExists(t, marker, "a run beyond the limit ran its program")

	// The exclusive lease on the key is apart from its permits.
	code, _, stderr = lockwatchRun(t, "run", "--redis", sharedAddr, "--key", key, "--", "true")
	assert.Equal(t, exitOK, code, stderr)

	waiter, waiterDir := startPermitWaiter(t, key, n)
	time.Sleep(300 * time.Millisecond)
	assert.NoFileExists(t, filepath.Join(waiterDir, "env"), "the waiter ran while all permits were held")
	assert.Equal(t, exitOK, stop(t, dirs[1], procs[1]), procs[1].stderr.String())
	got := readPermitEnv(t, waitFile(t, filepath.Join(waiterDir, "env"), waiter))
	assert.Equal(t, envs[1].index, got.index, "the waiter did not get the released permit")
	assert.Greater(t, got.fence, envs[1].fence, "the permit's next holder's fence is not larger")

	for i, p := range procs {
		if i != 1 {
			assert.Equal(t, exitOK, stop(t, dirs[i], p), p.stderr.String())
		}
	}
	assert.Equal(t, exitOK, stop(t, waiterDir, waiter), waiter.stderr.String())
}

// startPermitWaiter starts a run that waits for one of the n permits of
// key, and returns once it queues on every permit.
func startPermitWaiter(t *testing.T, key string, n int) (*proc, string) {
	t.Helper()
	dir := t.TempDir()
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", key, "--permits", strconv.Itoa(n),
		"--wait", "20s", "--", "/bin/sh", "-c", permitScript)
	client := redis.NewClient(&redis.Options{Addr: sharedAddr})
	t.Cleanup(func() { _ = client.Close() })
	ctx := testContext(t)
	require.Eventually(t, func() bool {
		for i := range n {
			if client.LLen(ctx, leasekeys.OfSlot(defaultNamespace, key, i).Queue).Val() == 0 {
				return false
			}
		}
		return true
	}, procTimeout, 10*time.Millisecond, "the waiter did not queue on every permit")
	return p, dir
}

// TestPermitWaitRunsWhenOneFinishes: a run with --wait whose permits are
// all held runs its program once a holder's program exits, and exits 75
// without running it when none does within the wait.
func TestPermitWaitRunsWhenOneFinishes(t *testing.T) {
	t.Parallel()
	const key = "permits-wait"
	h, dir, first := permitHolder(t, sharedAddr, key, 1)

	marker := filepath.Join(t.TempDir(), "ran")
	began := time.Now()
	code, _, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", key, "--permits", "1", "--wait", "300ms",
		"--", "/bin/sh", "-c", "touch "+marker)
	assert.Equal(t, exitHeld, code, stderr)
	assert.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "--wait did not wait")
	assert.NoFileExists(t, marker)

	second := start(t, "run", "--redis", sharedAddr, "--key", key, "--permits", "1", "--wait", "20s",
		"--", "/bin/sh", "-c", `echo "$LOCKWATCH_KEY $LOCKWATCH_PERMIT $LOCKWATCH_FENCE"`)
	assert.Equal(t, exitOK, stop(t, dir, h), h.stderr.String())
	require.Equal(t, exitOK, second.wait(t), second.stderr.String())
	f := strings.Fields(second.stdout.String())
	require.Len(t, f, 3, second.stdout.String())
	assert.Equal(t, key+"#0", f[0])
	assert.Equal(t, "0", f[1])
	next, err := strconv.ParseInt(f[2], 10, 64)
	require.NoError(t, err)
	assert.Greater(t, next, first.fence)
}

// TestLostPermitStopsProgram deletes the lock of the permit a program
// runs under: its next renewal is rejected, the program gets SIGTERM and
// lockwatch exits 79 naming the permit.
func TestLostPermitStopsProgram(t *testing.T) {
	t.Parallel()
	const key = "permits-lost"
	h, dir, e := permitHolder(t, sharedAddr, key, 2, "--ttl", "1500ms")
	client := redis.NewClient(&redis.Options{Addr: sharedAddr})
	t.Cleanup(func() { _ = client.Close() })
	deleted, err := client.Del(testContext(t), leasekeys.OfSlot(defaultNamespace, key, e.index).Lock).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), deleted, "the permit's lock was not in Redis")

	assert.Equal(t, exitLost, h.wait(t), h.stderr.String())
	assert.Contains(t, h.stderr.String(), e.key+": lease lost")
	assert.FileExists(t, filepath.Join(dir, "term"), "the program got no SIGTERM")
}

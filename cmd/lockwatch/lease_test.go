package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// inspectJSON runs lockwatch inspect --json with args and parses its
// object.
func inspectJSON(t *testing.T, args ...string) keyJSON {
	t.Helper()
	code, stdout, stderr := lockwatchRun(t, append([]string{"inspect", "--json"}, args...)...)
	require.Equal(t, exitOK, code, stderr)
	var info keyJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &info), stdout)
	return info
}

// inspectUnseen runs lockwatch inspect --json with args on a key Redis has
// nothing of: it prints what it read, and warns and exits 66.
func inspectUnseen(t *testing.T, args ...string) keyJSON {
	t.Helper()
	code, stdout, stderr := lockwatchRun(t, append([]string{"inspect", "--json"}, args...)...)
	require.Equal(t, exitNeverSeen, code, stderr)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "a mistyped key?")
	var info keyJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &info), stdout)
	assert.False(t, info.Held)
	assert.Zero(t, info.Fence)
	return info
}

// stop ends holderScript in dir and returns lockwatch's status.
func stop(t *testing.T, dir string, p *proc) int {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644))
	return p.wait(t)
}

func TestHeldKeyExits75WithoutRunning(t *testing.T) {
	t.Parallel()
	conn := []string{"--redis", sharedAddr}
	dir := t.TempDir()
	h, _ := holder(t, dir, conn, "held")
	marker := filepath.Join(t.TempDir(), "ran")

	// At once: well within the holder's TTL of 10 s (the rest of the
	// bound is a process start, a PING and a check on a loaded machine).
	const atOnce = 3 * time.Second
	began := time.Now()
	code, _, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", "held", "--", "/bin/sh", "-c", "touch "+marker)
	assert.Equal(t, exitHeld, code, stderr)
	assert.Less(t, time.Since(began), atOnce, "exit 75 was not at once")
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "held by another")

	began = time.Now()
	code, _, stderr = lockwatchRun(t, "run", "--redis", sharedAddr, "--key", "held", "--wait", "300ms", "--", "/bin/sh", "-c", "touch "+marker)
	assert.Equal(t, exitHeld, code, stderr)
	assert.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "--wait did not wait")
	assert.Less(t, time.Since(began), 300*time.Millisecond+atOnce, "--wait waited past its bound")
	assert.NoFileExists(t, marker, "the second program ran while the key was held")

	assert.Equal(t, exitOK, stop(t, dir, h), h.stderr.String())
	code, _, stderr = lockwatchRun(t, "run", "--redis", sharedAddr, "--key", "held", "--", "/bin/sh", "-c", "touch "+marker)
	assert.Equal(t, exitOK, code, stderr)
	assert.FileExists(t, marker, "released by the holder, the key was not free")
}

func TestWaitTakesKeyWhenReleased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, fence := holder(t, dir, []string{"--redis", sharedAddr}, "wait-release")
	second := start(t, "run", "--redis", sharedAddr, "--key", "wait-release", "--wait", "20s", "--",
		"/bin/sh", "-c", `echo "$LOCKWATCH_FENCE"`)
	assert.Equal(t, exitOK, stop(t, dir, h), h.stderr.String())
	require.Equal(t, exitOK, second.wait(t), second.stderr.String())
	next, err := strconv.ParseInt(strings.TrimSpace(second.stdout.String()), 10, 64)
	require.NoError(t, err)
	assert.Greater(t, next, fence)
}

func TestInspectJSON(t *testing.T) {
	t.Parallel()
	conn := []string{"--redis", sharedAddr}
	dir := t.TempDir()
	h, fence := holder(t, dir, conn, "inspected")

	info := inspectJSON(t, "--redis", sharedAddr, "--key", "inspected")
	lockKey := leasekeys.Of(defaultNamespace, "inspected").Lock
	assert.Equal(t, leasekeys.HashTag(lockKey), info.KeyHash, "the hash spans and the live page show")
	assert.True(t, info.Held)
	assert.Positive(t, info.TTLMillis)
	assert.LessOrEqual(t, info.TTLMillis, defaultTTL.Milliseconds())
	assert.Equal(t, fence, info.Fence, "inspect's fence is not the program's LOCKWATCH_FENCE")
	assert.Equal(t, "inspected", info.Key)
	assert.Equal(t, defaultNamespace, info.Namespace)
	assert.NotEmpty(t, info.Holder)

	code, stdout, stderr := lockwatchRun(t, "inspect", "--redis", sharedAddr, "--key", "inspected")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "held:      yes, by holder "+info.Holder)
	assert.Contains(t, stdout, strconv.FormatInt(fence, 10))

	assert.Equal(t, exitOK, stop(t, dir, h), h.stderr.String())
	after := inspectJSON(t, "--redis", sharedAddr, "--key", "inspected")
	assert.False(t, after.Held)
	assert.Zero(t, after.TTLMillis)
	assert.Empty(t, after.Holder)
	assert.Equal(t, fence, after.Fence, "the fence is remembered after the release")

	// Another namespace has fences of its own: Redis has none of the key
	// there.
	inspectUnseen(t, "--redis", sharedAddr, "--key", "inspected", "--namespace", "elsewhere")
}

func TestForceReleaseTerminatesHolder(t *testing.T) {
	t.Parallel()
	testForceRelease(t, []string{"--redis", sharedAddr})
}

// testForceRelease checks release --force through the connection flags
// conn: the holder's program is terminated, its lockwatch exits 79 naming
// force_released, and the next run gets a larger fence.
func testForceRelease(t *testing.T, conn []string) {
	dir := t.TempDir()
	// A short TTL: the holder finds out at its next renewal, TTL/3 later.
	h, fence := holder(t, dir, conn, "forced", "--ttl", "1500ms")
	info := inspectJSON(t, append([]string{"--key", "forced"}, conn...)...)
	assert.True(t, info.Held)
	assert.Equal(t, fence, info.Fence)

	// Another holder's hash: nothing changes.
	code, stdout, stderr := lockwatchRun(t, append([]string{"release", "--force", "--key", "forced", "--holder", "000000000000"}, conn...)...)
	require.Equal(t, exitNotHeld, code, stderr)
	assert.Contains(t, stdout, "is held by holder "+info.Holder+", not 000000000000: nothing changed")
	assert.Equal(t, info.Holder, inspectJSON(t, append([]string{"--key", "forced"}, conn...)...).Holder)
	code, _, stderr = lockwatchRun(t, append([]string{"release", "--force", "--key", "forced", "--holder", "not-a-hash"}, conn...)...)
	require.Equal(t, exitUsage, code, stderr)

	// As an operator calls it: no --holder, so release inspects first and
	// ends the holder it sees (TestProgramIgnoringTermIsKilledAfterGrace
	// passes --holder).
	code, stdout, stderr = lockwatchRun(t, append([]string{"release", "--force", "--key", "forced"}, conn...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "released forced")
	assert.Contains(t, stdout, strconv.FormatInt(fence, 10))
	assert.Contains(t, stderr, "level=WARN", "the Locker's Warn log does not reach the operator")

	assert.Equal(t, exitLost, h.wait(t), h.stderr.String())
	assert.Contains(t, h.stderr.String(), "force_released")
	assert.FileExists(t, filepath.Join(dir, "term"), "the holder's program got no SIGTERM")

	// The same force again, as a re-sent command is: it answers what the
	// first did, not "nothing changed".
	code, stdout, stderr = lockwatchRun(t, append([]string{"release", "--force", "--key", "forced", "--holder", info.Holder}, conn...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "released forced")

	code, stdout, stderr = lockwatchRun(t, append(append([]string{"run", "--key", "forced"}, conn...),
		"--", "/bin/sh", "-c", `echo "$LOCKWATCH_FENCE"`)...)
	require.Equal(t, exitOK, code, stderr)
	next, err := strconv.ParseInt(strings.TrimSpace(stdout), 10, 64)
	require.NoError(t, err)
	assert.Greater(t, next, fence)

	code, stdout, stderr = lockwatchRun(t, append([]string{"release", "--force", "--key", "forced"}, conn...)...)
	assert.Equal(t, exitNotHeld, code, stderr)
	assert.Contains(t, stdout, "not held")
}

// TestPausedRedisTerminatesBeforeExpiry stops the server while the program
// runs: the program must get SIGTERM before the key could expire, so that
// it can stop before another holder can start.
func TestPausedRedisTerminatesBeforeExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := testContext(t)
	dir := t.TempDir()
	h, _ := holder(t, dir, []string{"--redis", srv.Addr()}, "paused", "--ttl", "2s")

	lockKey := leasekeys.Of(defaultNamespace, "paused").Lock
	sent := time.Now()
	pttl, err := client.PTTL(ctx, lockKey).Result()
	require.NoError(t, err)
	require.Positive(t, pttl)
	// The server answered at or after sent, so the key expires at
	// sent+pttl at the earliest, and nothing renews it once paused.
	earliestExpiry := sent.Add(pttl)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })

	assert.Equal(t, exitLost, h.wait(t), h.stderr.String())
	// The renewal sent into the stopped server gets no answer within its
	// timeout (TTL/5), before the cancel point.
	assert.Contains(t, h.stderr.String(), "lease lost (renewal_unknown")
	termNanos, err := strconv.ParseInt(waitFile(t, filepath.Join(dir, "term"), nil), 10, 64)
	require.NoError(t, err)
	term := time.Unix(0, termNanos)
	t.Logf("paused %v before the earliest expiry; SIGTERM trap ran %v before it", earliestExpiry.Sub(sent), earliestExpiry.Sub(term))
	assert.True(t, term.Before(earliestExpiry), "the program got SIGTERM %v after the key could expire", term.Sub(earliestExpiry))
}

func TestSignalsReachProgram(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			name := strings.TrimPrefix(strings.ToUpper(strings.ReplaceAll(sig.String(), " ", "")), "SIG")
			script := `trap 'echo got > "$DIR/got"; exit 7' ` + signalName(sig) + `
echo ready > "$DIR/ready"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
			p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", "signal-"+name, "--", "/bin/sh", "-c", script)
			waitFile(t, filepath.Join(dir, "ready"), p)
			require.NoError(t, p.cmd.Process.Signal(sig))
			assert.Equal(t, 7, p.wait(t), p.stderr.String())
			assert.FileExists(t, filepath.Join(dir, "got"))
			// lockwatch waited for the program, then released the key.
			assert.False(t, inspectJSON(t, "--redis", sharedAddr, "--key", "signal-"+name).Held)
		})
	}
}

// signalName is sig as the shell's trap names it.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGUSR1:
		return "USR1"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGHUP:
		return "HUP"
	}
	panic("no trap name for " + sig.String())
}

func TestRedisURL(t *testing.T) {
	t.Parallel()
	url := "redis://" + sharedAddr + "/0"
	dir := t.TempDir()
	h, fence := holder(t, dir, []string{"--redis", url}, "url")
	info := inspectJSON(t, "--redis", url, "--key", "url")
	assert.True(t, info.Held)
	assert.Equal(t, fence, info.Fence)
	assert.Equal(t, exitOK, stop(t, dir, h), h.stderr.String())
	// REDIS_URL is the default of --redis.
	p := startEnv(t, []string{envRedisURL + "=" + url}, "inspect", "--json", "--key", "url")
	require.Equal(t, exitOK, p.wait(t), p.stderr.String())
	assert.Contains(t, p.stdout.String(), `"held":false`)
	assert.Empty(t, p.stderr.String(), "$REDIS_URL was given: no default to say")
}

// TestSignalWhileWaiting stops a run that waits for a held key: it exits
// 128+n without running its program, as a shell reports a job it
// interrupted.
func TestSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, _ := holder(t, dir, []string{"--redis", sharedAddr}, "interrupted")
	marker := filepath.Join(t.TempDir(), "ran")
	waiter := start(t, "run", "--redis", sharedAddr, "--key", "interrupted", "--wait", "20s", "--", "/bin/sh", "-c", "touch "+marker)

	// Once the key's wait queue has an entry, the waiter is past its
	// first contended attempt.
	queue := leasekeys.Of(defaultNamespace, "interrupted").Queue
	client := redis.NewClient(&redis.Options{Addr: sharedAddr})
	t.Cleanup(func() { _ = client.Close() })
	ctx := testContext(t)
	require.Eventually(t, func() bool { return client.LLen(ctx, queue).Val() == 1 }, procTimeout, 10*time.Millisecond)

	require.NoError(t, waiter.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, exitSignalBase+int(syscall.SIGINT), waiter.wait(t), waiter.stderr.String())
	assertOneLine(t, waiter.stderr.String())
	assert.NoFileExists(t, marker)
	assert.Equal(t, exitOK, stop(t, dir, h), h.stderr.String())
}

// TestProgramIgnoringTermIsKilledAfterGrace: a program that goes on after
// SIGTERM gets SIGKILL once --grace has passed, not before.
func TestProgramIgnoringTermIsKilledAfterGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const grace = 350 * time.Millisecond
	script := `trap 'date +%s%N > "$DIR/term"' TERM
echo "$LOCKWATCH_FENCE" > "$DIR/fence.tmp"; mv "$DIR/fence.tmp" "$DIR/fence"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	// The grace is at most half the safety margin, TTL/20.
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", "stubborn", "--ttl", "7s",
		"--grace", grace.String(), "--", "/bin/sh", "-c", script)
	waitFile(t, filepath.Join(dir, "fence"), p)
	holder := inspectJSON(t, "--redis", sharedAddr, "--key", "stubborn").Holder
	code, _, stderr := lockwatchRun(t, "release", "--redis", sharedAddr, "--force", "--key", "stubborn", "--holder", holder)
	require.Equal(t, exitOK, code, stderr)

	assert.Equal(t, exitLost, p.wait(t), p.stderr.String())
	exited := time.Now()
	termNanos, err := strconv.ParseInt(waitFile(t, filepath.Join(dir, "term"), nil), 10, 64)
	require.NoError(t, err)
	afterTerm := exited.Sub(time.Unix(0, termNanos))
	assert.GreaterOrEqual(t, afterTerm, grace-50*time.Millisecond, "SIGKILL came before the grace had passed")
	assert.Less(t, afterTerm, grace+3*time.Second, "no SIGKILL: the program ran on (its loop lasts 20 s)")
	assert.Contains(t, p.stderr.String(), "SIGKILL in "+grace.String())
}

// TestUnsafeServerExits69: a server that may evict a held lock key is
// refused before anything is taken (lease.Locker.Check).
func TestUnsafeServerExits69(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory-policy", "allkeys-lru")
	marker := filepath.Join(t.TempDir(), "ran")
	code, _, stderr := lockwatchRun(t, "run", "--redis", srv.Addr(), "--key", "evictable", "--", "/bin/sh", "-c", "touch "+marker)
	assert.Equal(t, exitUnavailable, code, stderr)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "allkeys-lru")
	assert.NoFileExists(t, marker)
	inspectUnseen(t, "--redis", srv.Addr(), "--key", "evictable") // nothing was taken
}

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
	"github.com/lockwatch/lockwatch/telemetry"
)

// operatorLocker is a Locker of the test process on the shared server. Its
// short TTL lets a holder find a force release at its next renewal, a
// third of it later.
func operatorLocker(t *testing.T) *lease.Locker {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: sharedAddr})
	quiet := telemetry.New(telemetry.Config{Logger: slog.New(slog.DiscardHandler)})
	lk := lease.NewLocker(c, lease.Config{TTL: 1500 * time.Millisecond, Telemetry: quiet})
	t.Cleanup(func() {
		_ = lk.Close()
		_ = c.Close()
	})
	return lk
}

// pageView is the part of the debug page's JSON the operator reads.
type pageView struct {
	Leases []struct {
		KeyHash string `json:"key_hash"`
		Key     string `json:"key"`
	} `json:"leases"`
	Permits []struct {
		KeyHash string `json:"key_hash"`
		Index   int    `json:"index"`
		Fence   int64  `json:"fence"`
	} `json:"permits"`
}

// readPage reads lk's debug page as an operator's script would.
func readPage(t *testing.T, lk *lease.Locker) pageView {
	t.Helper()
	srv := httptest.NewServer(debugpage.Handler(lk))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "?format=json")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var v pageView
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// assertForceReleased waits for ctx's lease to be lost to a force
// release: at its next renewal, well within its TTL.
func assertForceReleased(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		require.Fail(t, "the holder kept its lease after release --force")
	}
	var lost *lease.LostError
	require.ErrorAs(t, context.Cause(ctx), &lost)
	assert.Equal(t, lease.LossForceReleased, lost.Reason)
}

// inspectLines runs lockwatch inspect --json with args and parses its
// objects, one a line.
func inspectLines(t *testing.T, args ...string) []keyJSON {
	t.Helper()
	code, stdout, stderr := lockwatchRun(t, append([]string{"inspect", "--json", "--redis", sharedAddr}, args...)...)
	require.Equal(t, exitOK, code, stderr)
	var all []keyJSON
	for line := range strings.Lines(stdout) {
		var info keyJSON
		require.NoError(t, json.Unmarshal([]byte(line), &info), line)
		all = append(all, info)
	}
	return all
}

// TestInspectAndForceReleasePermits: a permit's names are its own, so
// inspect and release --force reach it by --key K --permit I (or
// --key-hash H, as the debug page shows it), and list them by --permits N;
// --key K#I names another lease, which Redis has nothing of.
func TestInspectAndForceReleasePermits(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	lk := operatorLocker(t)
	const key = "op-exports"
	sem, err := permits.New(lk, key, permits.Config{Limit: 3})
	require.NoError(t, err)
	a, err := sem.Acquire(ctx)
	require.NoError(t, err)
	b, err := sem.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = b.Release(ctx) }()

	list := inspectLines(t, "--key", key, "--permits", "3")
	require.Len(t, list, 3)
	for i, info := range list {
		require.NotNil(t, info.Permit)
		assert.Equal(t, i, *info.Permit)
		assert.Equal(t, permits.Key(key, i), info.Key)
		switch i {
		case a.Index, b.Index:
			held := map[int]*permits.Permit{a.Index: a, b.Index: b}[i]
			assert.True(t, info.Held, "permit %d", i)
			assert.Equal(t, held.Fence(), info.Fence, "permit %d", i)
			assert.NotEmpty(t, info.Holder)
		default:
			assert.False(t, info.Held, "permit %d", i)
		}
	}
	code, stdout, stderr := lockwatchRun(t, "inspect", "--redis", sharedAddr, "--key", key, "--permits", "3")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "key:       "+key+"\n")
	assert.Contains(t, stdout, "permit "+strconv.Itoa(a.Index)+"   held by holder "+list[a.Index].Holder)
	assert.Equal(t, 3, strings.Count(stdout, "\npermit "), stdout)

	// The permit by the hash and index the debug page shows.
	// The page lists the process's permits, whichever Locker took them.
	shown := 0
	for _, p := range readPage(t, lk).Permits {
		if p.KeyHash != list[0].KeyHash {
			continue
		}
		shown++
		byHash := inspectLines(t, "--key-hash", p.KeyHash, "--permit", strconv.Itoa(p.Index))
		require.Len(t, byHash, 1)
		assert.True(t, byHash[0].Held)
		assert.Equal(t, p.Fence, byHash[0].Fence)
		assert.Empty(t, byHash[0].Key, "only the hash was given")
	}
	assert.Equal(t, 2, shown, "the page shows the two permits held")

	// K#I given as a key is another lease, and a warning.
	wrong := inspectUnseen(t, "--redis", sharedAddr, "--key", permits.Key(key, a.Index))
	assert.NotEqual(t, list[a.Index].KeyHash, wrong.KeyHash)

	code, stdout, stderr = lockwatchRun(t, "release", "--force", "--redis", sharedAddr, "--key", key, "--permit", strconv.Itoa(a.Index))
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "released permit "+strconv.Itoa(a.Index)+" of "+key+" from holder "+list[a.Index].Holder)
	assertForceReleased(t, a.Context())
	after := inspectLines(t, "--key", key, "--permit", strconv.Itoa(a.Index))
	assert.False(t, after[0].Held)
	assert.Equal(t, a.Fence(), after[0].Fence, "the fence is remembered")
	assert.True(t, inspectLines(t, "--key", key, "--permit", strconv.Itoa(b.Index))[0].Held, "another permit was taken")

	code, stdout, stderr = lockwatchRun(t, "release", "--force", "--redis", sharedAddr, "--key", key, "--permit", strconv.Itoa(a.Index))
	assert.Equal(t, exitNotHeld, code, stderr)
	assert.Contains(t, stdout, "was not held: nothing changed")

	// Released by its holder, every permit free: seen, so 0.
	require.NoError(t, b.Release(ctx))
	for _, info := range inspectLines(t, "--key", key, "--permits", "3") {
		assert.False(t, info.Held)
	}
	code, _, stderr = lockwatchRun(t, "inspect", "--redis", sharedAddr, "--key", key+"-none", "--permits", "3")
	assert.Equal(t, exitNeverSeen, code, stderr)
	assertOneLine(t, stderr)
}

// TestInspectAndForceReleaseByHash: the hash the debug page shows for a
// lease names it to inspect and release --force, as its key does.
func TestInspectAndForceReleaseByHash(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	lk := operatorLocker(t)
	l, err := lk.Acquire(ctx, "order:o2")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()

	page := readPage(t, lk)
	require.Len(t, page.Leases, 1)
	hash := page.Leases[0].KeyHash
	assert.Empty(t, page.Leases[0].Key, "the page hides raw keys by default")

	byKey := inspectJSON(t, "--redis", sharedAddr, "--key", "order:o2")
	byHash := inspectJSON(t, "--redis", sharedAddr, "--key-hash", hash)
	assert.Empty(t, byHash.Key)
	byHash.Key = byKey.Key
	byKey.TTLMillis, byHash.TTLMillis = 0, 0 // read at two moments
	assert.Equal(t, byKey, byHash, "the hash names the key's lease")
	assert.True(t, byHash.Held)
	assert.Equal(t, l.Fence(), byHash.Fence)
	code, stdout, stderr := lockwatchRun(t, "inspect", "--redis", sharedAddr, "--key-hash", hash)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "key:       (given by its hash)\nkey hash:  "+hash+"\n")

	// The mistyped key of the issue: o2 for order:o2.
	code, stdout, stderr = lockwatchRun(t, "inspect", "--redis", sharedAddr, "--key", "o2")
	assert.Equal(t, exitNeverSeen, code, stderr)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "o2: Redis has nothing of it in namespace lockwatch")
	assert.Contains(t, stdout, "held:      no")
	other := "0" + hash[1:]
	if hash[0] == '0' {
		other = "1" + hash[1:]
	}
	inspectUnseen(t, "--redis", sharedAddr, "--key-hash", other)

	code, stdout, stderr = lockwatchRun(t, "release", "--force", "--redis", sharedAddr, "--key-hash", hash)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "released key hash "+hash+" from holder "+byKey.Holder)
	assertForceReleased(t, l.Context())
	assert.False(t, inspectJSON(t, "--redis", sharedAddr, "--key", "order:o2").Held)
}

// TestDefaultRedisIsSaid: a command given no address says, once, that it
// uses the default; one given --redis or $REDIS_URL says nothing of it
// (TestRedisURL, and every test's one-line stderr).
func TestDefaultRedisIsSaid(t *testing.T) {
	t.Parallel()
	// Whatever answers at 127.0.0.1:6379 (a server, or nobody: 69), the
	// default is said first.
	code, _, stderr := lockwatchRun(t, "inspect", "--key", "op-default")
	want := "lockwatch: using Redis at 127.0.0.1:6379 (the default; set --redis or $REDIS_URL)\n"
	assert.True(t, strings.HasPrefix(stderr, want), "stderr %q", stderr)
	assert.Equal(t, 1, strings.Count(stderr, "using Redis at"), stderr)
	assert.Contains(t, []int{exitOK, exitNeverSeen, exitUnavailable}, code, stderr)

	p := startEnv(t, []string{envRedisURL + "=" + sharedAddr}, "inspect", "--key", "op-default")
	assert.Equal(t, exitNeverSeen, p.wait(t), p.stderr.String())
	assert.NotContains(t, p.stderr.String(), "using Redis at")
	assertOneLine(t, p.stderr.String())
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// markKey is the Redis key of a fence.RedisStore's record of key in the
// default store namespace, as fence/keys.go derives it: where these tests
// put a mark no lease carried.
func markKey(resource, key string) string {
	sum := sha256.Sum256([]byte(key))
	return defaultStoreNamespace + ":" + resource + ":{" + hex.EncodeToString(sum[:16]) + "}"
}

// sharedClient is a client of the shared redis-server.
func sharedClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: sharedAddr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mintedLease is the fence of a lease lockwatch run took, and the token it
// handed its program: $LOCKWATCH_FENCE_TOKEN where lockwatch sets it (the
// token in its wire form), else $LOCKWATCH_FENCE.
type mintedLease struct {
	fence int64
	token string
}

// mint runs a lease on key with lockwatch run and returns it.
func mint(t *testing.T, key string) mintedLease {
	t.Helper()
	code, stdout, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", key, "--",
		"/bin/sh", "-c", `printf '%s\n%s\n' "$LOCKWATCH_FENCE" "$LOCKWATCH_FENCE_TOKEN"`)
	require.Equal(t, exitOK, code, stderr)
	fenceLine, token, _ := strings.Cut(stdout, "\n")
	n, err := strconv.ParseInt(fenceLine, 10, 64)
	require.NoError(t, err, stdout)
	if token = strings.TrimSpace(token); token == "" {
		token = fenceLine
	}
	return mintedLease{n, token}
}

// write writes value at the store under a lease's token, as a program run
// under lockwatch would.
func write(t *testing.T, s *fence.RedisStore, key string, l mintedLease, value string) error {
	t.Helper()
	tok, err := fence.Parse(l.token)
	require.NoError(t, err, l.token)
	return s.Write(testContext(t), key, tok, []byte(value))
}

// setMark writes a mark as a token no lease carried would have.
func setMark(t *testing.T, c *redis.Client, resource, key, mark string) {
	t.Helper()
	require.NoError(t, c.HSet(testContext(t), markKey(resource, key), "fence", mark).Err())
}

func markOf(t *testing.T, c *redis.Client, resource, key string) string {
	t.Helper()
	m, err := c.HGet(testContext(t), markKey(resource, key), "fence").Result()
	require.NoError(t, err)
	return m
}

// TestFenceRepairsABrickedMark: a mark moved months ahead of the fences
// minted refuses every new lease; lockwatch fence shows it bricked and
// leaves it; --force sets it back to the newest fence minted or Redis TIME,
// whichever is later, after which a new lease's write is accepted.
func TestFenceRepairsABrickedMark(t *testing.T) {
	t.Parallel()
	const key, resource = "fence-bricked", "ledger"
	c := sharedClient(t)
	store := fence.NewRedisStore(c, resource, fence.RedisConfig{})
	first := mint(t, key)
	require.NoError(t, write(t, store, key, first, "a"))
	bricked := strconv.FormatInt(first.fence+10_000_000_000_000, 10) // about 116 days ahead
	setMark(t, c, resource, key, bricked)
	second := mint(t, key)
	require.ErrorIs(t, write(t, store, key, second, "b"), fence.ErrStale, "the mark refuses the next lease")

	code, stdout, stderr := lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource)
	assert.Equal(t, exitAhead, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, stdout, "minted:    "+strconv.FormatInt(second.fence, 10)+" ")
	assert.Contains(t, stdout, "mark:      "+bricked+"\n")
	assert.Contains(t, stdout, "status:    bricked: ")
	assert.Regexp(t, `until minting passes it, when Redis TIME reaches it: about \d{4}-\d\d-\d\dT[0-9:]+Z \(11[5-6]\.\d days from now`, stdout)
	assert.Contains(t, stdout, "--force")
	assert.Equal(t, bricked, markOf(t, c, resource, key), "inspecting changes nothing")

	code, stdout, stderr = lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource, "--force", "--max-skew", "1ms")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	m := regexp.MustCompile(`repaired:  mark before ` + bricked + `, after (\d+):`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	after, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after, second.fence, "at least the newest fence minted")
	assert.Less(t, after, first.fence+10_000_000_000_000, "far below the bricked mark: the clock at the repair")
	assert.Contains(t, stderr, "level=WARN")
	assert.Contains(t, stderr, "fence mark set back", "the repair is logged")
	assert.Equal(t, m[1], markOf(t, c, resource, key))

	code, stdout, stderr = lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource, "--force")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "status:    ok: ")
	assert.NotContains(t, stdout, "repaired:", "a second run has nothing to do")
	assert.Empty(t, stderr, "nor anything to log")

	third := mint(t, key)
	require.NoError(t, write(t, store, key, third, "c"), "after the repair a new lease's write is accepted")
	v, err := c.HGet(testContext(t), markKey(resource, key), "value").Result()
	require.NoError(t, err)
	assert.Equal(t, "c", v)
}

// TestFenceAheadOfMintedButBehindTheClock: a mark above every fence minted
// but already passed by Redis TIME refuses the holders so far, not the next
// lease: it mends itself, and --force leaves it, since setting it back to
// the minted fence would let the leases below the clock write again.
func TestFenceAheadOfMintedButBehindTheClock(t *testing.T) {
	t.Parallel()
	const key, resource = "fence-ahead", "ledger"
	c := sharedClient(t)
	minted := mint(t, key).fence
	setMark(t, c, resource, key, strconv.FormatInt(minted+1, 10))

	code, stdout, stderr := lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource)
	assert.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "status:    ok: the next acquire mints above the mark")
	assert.Contains(t, stdout, "the holders of fences up to "+strconv.FormatInt(minted, 10)+" are refused")

	code, stdout, stderr = lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource, "--force")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.NotContains(t, stdout, "repaired:")
	assert.Equal(t, strconv.FormatInt(minted+1, 10), markOf(t, c, resource, key), "left as it is")
}

// TestFenceWithNothingToRepair: a mark at or below the newest fence minted,
// and no mark at all, are ok (exit 0), with or without --force, and stay
// as they are.
func TestFenceWithNothingToRepair(t *testing.T) {
	t.Parallel()
	const key, resource = "fence-fine", "ledger"
	c := sharedClient(t)
	minted := mint(t, key).fence

	code, stdout, stderr := lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource, "--force")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "mark:      none")
	assert.Contains(t, stdout, "status:    ok: no mark")

	for _, mark := range []int64{minted, minted - 1} {
		setMark(t, c, resource, key, strconv.FormatInt(mark, 10))
		for _, force := range []bool{false, true} {
			args := []string{"fence", "--redis", sharedAddr, "--key", key, "--resource", resource}
			if force {
				args = append(args, "--force")
			}
			code, stdout, stderr := lockwatchRun(t, args...)
			assert.Equal(t, exitOK, code, stderr)
			assert.Contains(t, stdout, "status:    ok: the mark is not ahead")
			assert.Equal(t, strconv.FormatInt(mark, 10), markOf(t, c, resource, key))
		}
	}
}

// TestFenceWithoutAMintedFence: with the lease's fence record gone nothing
// says where the mark belongs: --force refuses without --to, and with it
// sets the mark there. A mark the clock has passed is no brick.
func TestFenceWithoutAMintedFence(t *testing.T) {
	t.Parallel()
	const key, resource = "fence-no-record", "ledger"
	c := sharedClient(t)
	now, err := c.Time(testContext(t)).Result()
	require.NoError(t, err)
	bricked := strconv.FormatInt(now.UnixMicro()+10_000_000_000_000, 10)
	setMark(t, c, resource, key, bricked)
	base := []string{"fence", "--redis", sharedAddr, "--key", key, "--resource", resource}

	code, stdout, stderr := lockwatchRun(t, base...)
	assert.Equal(t, exitAhead, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "minted:    none remembered")
	assert.Contains(t, stdout, "status:    bricked: the mark is ahead of every fence minted for the key and of Redis TIME")

	code, stdout, stderr = lockwatchRun(t, append(base, "--force")...)
	assert.Equal(t, exitUsage, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "no fence minted for "+key+" is remembered")
	assert.Contains(t, stderr, "--to N")
	assert.Equal(t, bricked, markOf(t, c, resource, key), "refused: unchanged")

	// --to below the clock: the mark goes to the clock, which bounds every
	// fence minted before the repair; above it, to --to.
	to := strconv.FormatInt(now.UnixMicro()+60_000_000, 10)
	code, stdout, stderr = lockwatchRun(t, append(base, "--force", "--to", to)...)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "repaired:  mark before "+bricked+", after "+to+":")
	assert.Equal(t, to, markOf(t, c, resource, key))

	setMark(t, c, resource, key, "1000")
	code, stdout, stderr = lockwatchRun(t, base...)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "status:    ok: the next acquire mints above the mark")
}

// TestFenceToNeverBelowMinted: --to below a known minted fence would let
// the leases between write again: refused.
func TestFenceToNeverBelowMinted(t *testing.T) {
	t.Parallel()
	const key, resource = "fence-to-below", "ledger"
	c := sharedClient(t)
	minted := mint(t, key).fence
	bricked := strconv.FormatInt(minted+10_000_000_000_000, 10)
	setMark(t, c, resource, key, bricked)

	code, _, stderr := lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource,
		"--force", "--to", strconv.FormatInt(minted-1, 10))
	assert.Equal(t, exitUsage, code, stderr)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "below the newest fence minted")
	assert.Equal(t, bricked, markOf(t, c, resource, key))

	above := strconv.FormatInt(minted+60_000_000, 10) // a minute: above the clock too
	code, _, stderr = lockwatchRun(t, "fence", "--redis", sharedAddr, "--key", key, "--resource", resource, "--force", "--to", above)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, above, markOf(t, c, resource, key), "--to may raise the fence set")
}

func TestFenceUsageAndFailures(t *testing.T) {
	t.Parallel()
	r := "--redis=" + sharedAddr
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"without key", []string{"fence", r, "--resource", "ledger"}, exitUsage, "--key is required"},
		{"without resource", []string{"fence", r, "--key", "k"}, exitUsage, "--resource is required"},
		{"to without force", []string{"fence", r, "--key", "k", "--resource", "ledger", "--to", "5"}, exitUsage, "give --force"},
		{"to not positive", []string{"fence", r, "--key", "k", "--resource", "ledger", "--force", "--to", "0"}, exitUsage, "fences are positive"},
		{"to not a number", []string{"fence", r, "--key", "k", "--resource", "ledger", "--force", "--to", "soon"}, exitUsage, "-to"},
		{"bad resource", []string{"fence", r, "--key", "k", "--resource", "a b"}, exitUsage, `resource "a b"`},
		{"bad store namespace", []string{"fence", r, "--key", "k", "--resource", "ledger", "--store-namespace", "x{y}"}, exitUsage, `Namespace "x{y}"`},
		{"bad lease namespace", []string{"fence", r, "--key", "k", "--resource", "ledger", "--namespace", "x{y}"}, exitUsage, "namespace"},
		{"unexpected argument", []string{"fence", r, "--key", "k", "--resource", "ledger", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"unreachable", []string{"fence", "--redis", integration.FreeLoopbackAddr(t), "--key", "k", "--resource", "ledger"}, exitUnavailable, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := lockwatchRun(t, tc.args...)
			assert.Equal(t, tc.code, code, "stderr: %s", stderr)
			assert.Empty(t, stdout)
			assertOneLine(t, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}

	// A stored mark that is not a fence was not written by lockwatch: 70,
	// and nothing is repaired.
	c := sharedClient(t)
	setMark(t, c, "ledger", "fence-garbage", "0042")
	code, stdout, stderr := lockwatchRun(t, "fence", r, "--key", "fence-garbage", "--resource", "ledger", "--force")
	assert.Equal(t, exitInternal, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assertOneLine(t, stderr)
	assert.Contains(t, stderr, "not a canonical fence")
	assert.Equal(t, "0042", markOf(t, c, "ledger", "fence-garbage"))
}

func TestFenceHelp(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := lockwatchRun(t, "-h")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "\n  fence    ")
	code, stdout, stderr = lockwatchRun(t, "fence", "-h")
	require.Equal(t, exitOK, code, stderr)
	for _, w := range []string{"--force", "--to", "--resource", "--store-namespace", "bricked", "Redis TIME", "UPDATE <table>",
		" 0 ", " 1 ", " 64 ", " 69 ", " 70 "} {
		assert.Contains(t, stdout, w)
	}
}

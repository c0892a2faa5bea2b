package main

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redisacl"
)

// The Redis ACL of SECURITY.md for the user of lockwatch fence
// (internal/testenv/redisacl's FenceOperator), applied to a real redis-server: the
// command reads and repairs a bricked mark under exactly these rules, each
// grant is needed, and the users a service or lockwatch inspect has cannot
// run it.

// aclFence is one lockwatch fence on s's key "fence-acl" at resource
// "ledger", logged in as user with password (--user, and the password from
// the environment as an operator passes it).
func aclFence(t *testing.T, s *redisacl.Server, user, password string, args ...string) (int, string, string) {
	t.Helper()
	p := startEnv(t, []string{envPassword + "=" + password, noExitSleep()},
		append([]string{"fence", "--redis", s.Addr(), "--user", user, "--key", "fence-acl", "--resource", "ledger"}, args...)...)
	code := p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

// brickedServer starts a redis-server of the test's own where the key
// "fence-acl" has a lease's fence record (minted by lockwatch run, as the
// default user) and, at resource "ledger", a mark far ahead of it, as a
// token no lease carried leaves it. It returns the minted fence and the
// mark, which resetMark writes again.
func brickedServer(t *testing.T) (s *redisacl.Server, minted int64, bricked string) {
	t.Helper()
	s = redisacl.Start(t)
	p := startEnv(t, []string{noExitSleep()}, "run", "--redis", s.Addr(), "--key", "fence-acl", "--", "/bin/sh", "-c", `echo "$LOCKWATCH_FENCE"`)
	require.Equal(t, exitOK, p.wait(t), p.stderr.String())
	minted, err := strconv.ParseInt(strings.TrimSpace(p.stdout.String()), 10, 64)
	require.NoError(t, err, p.stdout.String())
	bricked = strconv.FormatInt(minted+10_000_000_000_000, 10) // about 116 days ahead
	resetMark(t, s, bricked)
	return s, minted, bricked
}

// noExitSleep is GORACE with atexit_sleep_ms=0 added: a lockwatch built
// with -race otherwise sleeps a second before it exits 0, which would be
// most of these tests' time.
func noExitSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// resetMark sets the mark to bricked and empties the script cache, as after
// a restart: each call's EVALSHA is answered NOSCRIPT and its EVAL runs.
func resetMark(t *testing.T, s *redisacl.Server, bricked string) {
	t.Helper()
	setMark(t, s.Admin, "ledger", "fence-acl", bricked)
	require.NoError(t, s.Admin.ScriptFlush(testContext(t)).Err())
}

// TestFenceUnderTheFenceOperatorACL: with SECURITY.md's rules for
// lockwatch-fence, lockwatch fence reads a bricked mark and leaves it, and
// --force sets it back, and the server refuses the user nothing doing it;
// the user cannot end a lease or reach past its two namespaces.
func TestFenceUnderTheFenceOperatorACL(t *testing.T) {
	t.Parallel()
	s, minted, bricked := brickedServer(t)
	user := redisacl.FenceOperatorUser
	password := s.SetUser(t, user, redisacl.FenceOperator(redisacl.LeaseNamespace, redisacl.StoreNamespace))

	code, stdout, stderr := aclFence(t, s, user, password)
	assert.Equal(t, exitAhead, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, stdout, "minted:    "+strconv.FormatInt(minted, 10)+" ")
	assert.Contains(t, stdout, "mark:      "+bricked+"\n")
	assert.Contains(t, stdout, "status:    bricked: ")
	assert.Equal(t, bricked, markOf(t, s.Admin, "ledger", "fence-acl"), "inspecting changes nothing")

	require.NoError(t, s.Admin.ScriptFlush(testContext(t)).Err())
	code, stdout, stderr = aclFence(t, s, user, password, "--force")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	m := regexp.MustCompile(`repaired:  mark before ` + bricked + `, after (\d+):`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	after, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after, minted, "at least the newest fence minted")
	assert.Less(t, after, minted+10_000_000_000_000, "far below the bricked mark")
	assert.Equal(t, m[1], markOf(t, s.Admin, "ledger", "fence-acl"))

	// Checked before the refusals below, which are the test's own doing.
	assert.Empty(t, s.Refusals(t, user), "the rules are all lockwatch fence and --force need")

	// No more: not a lease's end, nor keys outside the two namespaces.
	c := s.Client(t, func(o *redis.Options) { o.Username, o.Password = user, password })
	ctx := testContext(t)
	lockKey := redisacl.LeaseNamespace + ":{0123456789abcdef0123456789abcdef}:l"
	redisacl.RequireRefused(t, c.Del(ctx, lockKey).Err(), "DEL of a lock")
	redisacl.RequireRefused(t, c.Eval(ctx, "return redis.call('SET', KEYS[1], 'x')", []string{lockKey}).Err(), "a script setting a lock")
	redisacl.RequireRefused(t, c.Publish(ctx, leasekeys.GrantChannel(redisacl.LeaseNamespace, "locker"), "").Err(), "PUBLISH on a grant channel")
	redisacl.RequireRefused(t, c.HGet(ctx, "billing:fence:ledger:{0123456789abcdef0123456789abcdef}", "fence").Err(), "a mark in another namespace")
}

// TestFenceACLMissing: lockwatch fence --force under rules that lack a
// grant of lockwatch-fence's, or under the rules of lockwatch inspect's
// user or a store's, each of which reaches one namespace only, fails
// closed: Redis's refusal on one line, exit 69, and the mark as it was.
// Every grant is needed: the server's ACL LOG names the one dropped.
func TestFenceACLMissing(t *testing.T) {
	t.Parallel()
	s, _, bricked := brickedServer(t)
	leaseNS, storeNS := redisacl.LeaseNamespace, redisacl.StoreNamespace
	rules := redisacl.FenceOperator(leaseNS, storeNS)

	refused := func(t *testing.T, user string, rules []string) {
		t.Helper()
		resetMark(t, s, bricked)
		code, stdout, stderr := aclFence(t, s, user, s.SetUser(t, user, rules), "--force")
		assert.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", stdout, stderr)
		assertOneLine(t, stderr)
		assert.True(t, redisacl.Refused(errors.New(stderr)), "an ACL refusal: %s", stderr)
		assert.NotContains(t, stdout, "repaired:")
		assert.Equal(t, bricked, markOf(t, s.Admin, "ledger", "fence-acl"), "the mark as it was")
		t.Logf("%s", strings.TrimSpace(stderr))
	}

	t.Run("operator", func(t *testing.T) {
		refused(t, redisacl.OperatorUser, redisacl.Operator(leaseNS))
	})
	t.Run("store", func(t *testing.T) {
		refused(t, redisacl.StoreUser, redisacl.Store(storeNS))
	})
	for i, drop := range rules {
		if !strings.ContainsAny(drop[:1], "+~") {
			continue
		}
		t.Run("no "+drop, func(t *testing.T) {
			user := "lockwatch-fence-" + strconv.Itoa(i)
			refused(t, user, redisacl.Without(rules, drop))
			denials := s.Refusals(t, user)
			require.Len(t, denials, 1, "%+v", denials)
			if cmd, ok := strings.CutPrefix(drop, "+"); ok {
				assert.Equal(t, redisacl.Denial{Reason: "command", Context: denials[0].Context, Object: cmd}, denials[0])
			} else {
				assert.Equal(t, "key", denials[0].Reason)
				pattern := strings.TrimSuffix(strings.TrimPrefix(drop, "~"), "*")
				assert.True(t, strings.HasPrefix(denials[0].Object, pattern), "a key of %s refused: %+v", drop, denials[0])
			}
		})
	}
}

package main

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

func TestUsageErrorsExit64WithOneLine(t *testing.T) {
	t.Parallel()
	r := "--redis=" + sharedAddr
	for _, tc := range []struct {
		name string
		args []string
		want string // in the message
	}{
		{"no command", nil, "no command"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"run without key", []string{"run", r, "--", "true"}, "--key is required"},
		{"run without program", []string{"run", r, "--key", "k"}, "no program"},
		{"run bad flag", []string{"run", "--bogus", "--key", "k", "--", "true"}, "-bogus"},
		{"run bad duration", []string{"run", "--ttl", "soon", "--key", "k", "--", "true"}, "-ttl"},
		{"run ttl below lease minimum", []string{"run", r, "--ttl", "1ms", "--key", "usage-ttl", "--", "true"}, "TTL"},
		{"run bad namespace", []string{"run", r, "--namespace", "a{b}", "--key", "k", "--", "true"}, "namespace"},
		{"run empty namespace", []string{"run", r, "--namespace", "", "--key", "k", "--", "true"}, "--namespace must not be empty"},
		{"run zero permits", []string{"run", r, "--permits", "0", "--key", "k", "--", "true"}, "--permits 0: must be 1 to 1024"},
		{"run negative permits", []string{"run", r, "--permits", "-2", "--key", "k", "--", "true"}, "--permits -2: must be 1 to 1024"},
		{"run too many permits", []string{"run", r, "--permits", "1025", "--key", "k", "--", "true"}, "--permits 1025: must be 1 to 1024"},
		{"run empty name", []string{"run", r, "--name", "", "--key", "k", "--", "true"}, "--name must not be empty"},
		{"release empty name", []string{"release", r, "--force", "--name", "", "--key", "k"}, "--name must not be empty"},
		{"inspect empty namespace", []string{"inspect", r, "--namespace", "", "--key", "k"}, "--namespace must not be empty"},
		{"run grace past the safety margin", []string{"run", r, "--ttl", "1s", "--grace", "2s", "--key", "usage-grace", "--", "true"}, "safety margin"},
		{"run grace just past the safety margin", []string{"run", r, "--ttl", "1s", "--grace", "51ms", "--key", "usage-grace", "--", "true"}, "safety margin"},
		{"inspect without key", []string{"inspect", r}, "give --key or --key-hash"},
		{"inspect key and key hash", []string{"inspect", r, "--key", "k", "--key-hash", strings.Repeat("0", 32)}, "give --key or --key-hash"},
		{"inspect short key hash", []string{"inspect", r, "--key-hash", "abc"}, `--key-hash "abc" is not a key hash`},
		{"release upper-case key hash", []string{"release", r, "--force", "--key-hash", strings.Repeat("A", 32)}, "is not a key hash"},
		{"inspect permit and permits", []string{"inspect", r, "--key", "k", "--permit", "1", "--permits", "3"}, "give one"},
		{"inspect too many permits", []string{"inspect", r, "--key", "k", "--permits", "1025"}, "--permits 1025: must be 1 to 1024"},
		{"release negative permit", []string{"release", r, "--force", "--key", "k", "--permit", "-1"}, "must be 0 to 1023"},
		{"release permits", []string{"release", r, "--force", "--key", "k", "--permits", "2"}, "-permits"},
		{"version argument", []string{"version", "now"}, `unexpected argument "now"`},
		{"release without force", []string{"release", r, "--key", "k"}, "--force takes the key from its holder"},
		{"sentinel and cluster", []string{"inspect", "--key", "k", "--sentinel", "127.0.0.1:1", "--master", "m", "--cluster", "127.0.0.1:2"}, "--sentinel and --cluster"},
		{"redis and cluster", []string{"inspect", "--key", "k", r, "--cluster", "127.0.0.1:2"}, "--redis conflicts"},
		{"sentinel without master", []string{"inspect", "--key", "k", "--sentinel", "127.0.0.1:1"}, "--master"},
		{"redis not host:port", []string{"inspect", "--key", "k", "--redis", "localhost"}, "host:port"},
		{"bad redis URL", []string{"inspect", "--key", "k", "--redis", "redis://127.0.0.1:1/notadb"}, "--redis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := lockwatchRun(t, tc.args...)
			assert.Equal(t, exitUsage, code, "stderr: %s", stderr)
			assert.Empty(t, stdout)
			assertOneLine(t, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

// TestGraceUpToHalfTheSafetyMargin: a --grace of half the safety margin
// is accepted (the default); one longer is refused
// (TestUsageErrorsExit64WithOneLine).
func TestGraceUpToHalfTheSafetyMargin(t *testing.T) {
	t.Parallel()
	code, _, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--ttl", "1s", "--grace", "50ms", "--key", "grace-margin", "--", "true")
	assert.Equal(t, exitOK, code, stderr)
}

func TestHelpDocumentsStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"run", "inspect", "release", "version", "--version"}},
		{[]string{"help"}, []string{"run", "inspect", "release"}},
		{[]string{"help", "run"}, []string{"LOCKWATCH_FENCE"}},
		{[]string{"run", "-h"}, []string{"LOCKWATCH_FENCE", "--grace", "TTL/20", "foreground", "A longer --grace is refused (64)", "watchdog", "one job", "subreaper", "Not supervised",
			"--permits", "LOCKWATCH_PERMIT", "K#i",
			" 64 ", " 69 ", " 70 ", " 75 ", " 76 ", " 79 ", " 126 ", " 127 ", "128+n"}},
		{[]string{"inspect", "-h"}, []string{"--json", "ttl_ms", "--key-hash", "--permits N", "--permit I", " 0 ", " 64 ", " 66 ", " 69 "}},
		{[]string{"release", "-h"}, []string{"--force", "force_released", "--key-hash", "--permit I", " 0 ", " 1 ", " 64 ", " 66 ", " 69 "}},
		{[]string{"version", "-h"}, []string{" 0 ", " 64 "}},
	} {
		code, stdout, stderr := lockwatchRun(t, tc.args...)
		assert.Equal(t, exitOK, code, "%v: %s", tc.args, stderr)
		for _, w := range tc.want {
			assert.Contains(t, stdout, w, "%v", tc.args)
		}
	}
}

func TestProgramStatusPassesThrough(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script string
		want   int
	}{
		{"success", "exit 0", 0},
		{"own status", "exit 3", 3},
		{"killed by SIGKILL", "kill -KILL $$", 128 + 9},
		{"killed by SIGSEGV", "kill -SEGV $$", 128 + 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", "status-"+tc.name, "--", "/bin/sh", "-c", tc.script)
			assert.Equal(t, tc.want, code, "stderr: %s", stderr)
		})
	}
}

func TestProgramEnvironment(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", "env-key", "--",
		"/bin/sh", "-c", `echo "$LOCKWATCH_KEY $LOCKWATCH_FENCE"`)
	require.Equal(t, 0, code, stderr)
	key, fence, ok := strings.Cut(strings.TrimSpace(stdout), " ")
	require.True(t, ok, stdout)
	assert.Equal(t, "env-key", key)
	assert.Regexp(t, `^[1-9][0-9]*$`, fence)
}

// tokenProgram prints the program's LOCKWATCH_FENCE and
// LOCKWATCH_FENCE_TOKEN on a line each, then its whole environment.
const tokenProgram = `printf '%s\n%s\n' "$LOCKWATCH_FENCE" "$LOCKWATCH_FENCE_TOKEN"; env`

// testSecret is a secret of n bytes in fence.ParseSecrets's form,
// base64.
func testSecret(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

// TestProgramToken: the program gets the lease's token in its wire form,
// LOCKWATCH_FENCE_TOKEN, which fence.Parse reads back to the token of
// LOCKWATCH_FENCE's fence scoped to the key in run's namespace: unsigned
// without LOCKWATCH_TOKEN_SECRETS, signed with its first secret with it.
// The program never sees the secrets: a program under lockwatch sends a
// token, it does not mint one.
func TestProgramToken(t *testing.T) {
	t.Parallel()
	active, old := testSecret(t, 32), testSecret(t, 48)
	for _, tc := range []struct {
		name, namespace, secrets string
	}{
		{"unsigned", defaultNamespace, ""},
		{"unsigned in a namespace", "tokens-ns", ""},
		{"signed", defaultNamespace, "k2=" + active + ",k1=" + old},
		{"signed in a namespace", "tokens-ns", "k2=" + active + ",k1=" + old},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := "token-" + strings.ReplaceAll(tc.name, " ", "-")
			var env []string
			if tc.secrets != "" {
				env = append(env, envSecrets+"="+tc.secrets)
			}
			p := startEnv(t, env, "run", "--redis", sharedAddr, "--namespace", tc.namespace, "--key", key, "--",
				"/bin/sh", "-c", tokenProgram)
			require.Equal(t, exitOK, p.wait(t), p.stderr.String())
			out := p.stdout.String()
			lines := strings.Split(out, "\n")
			require.GreaterOrEqual(t, len(lines), 2, out)
			n, err := strconv.ParseInt(lines[0], 10, 64)
			require.NoError(t, err, "LOCKWATCH_FENCE %q", lines[0])
			tok, err := fence.Parse(lines[1])
			require.NoError(t, err, "LOCKWATCH_FENCE_TOKEN %q", lines[1])

			assert.Equal(t, n, tok.Fence, "the token's fence is LOCKWATCH_FENCE")
			assert.False(t, tok.IsPlain(), "a plain token names no key")
			assert.Equal(t, fence.ScopeOf(tc.namespace, key), tok.Scope, "scoped to the key in run's namespace")
			if tc.secrets == "" {
				assert.Empty(t, tok.KeyID, "no secrets, no signature")
				assert.Equal(t, fence.Mint(tc.namespace, key, n, nil), tok)
			} else {
				secrets, err := fence.ParseSecrets(tc.secrets)
				require.NoError(t, err)
				assert.Equal(t, "k2", tok.KeyID, "signed with the first secret, the active one")
				assert.Equal(t, fence.Mint(tc.namespace, key, n, secrets), tok, "the signature is the active secret's")
			}

			// The environment, after the two lines: no secrets variable,
			// and no secret under another name either. Only names go into
			// the messages: the environment may hold the machine's own
			// secrets.
			var names []string
			for _, kv := range lines[2:] {
				name, _, _ := strings.Cut(kv, "=")
				names = append(names, name)
			}
			assert.NotContains(t, names, envSecrets, "the program sees %s", envSecrets)
			assert.False(t, slices.ContainsFunc(lines, func(l string) bool {
				return strings.Contains(l, active) || strings.Contains(l, old)
			}), "a secret is in the program's environment")
			assert.True(t, slices.Contains(lines, envFenceToken+"="+lines[1]), "env does not show the token as printed")
		})
	}
}

// TestInvalidTokenSecretsAreUsageErrors: a LOCKWATCH_TOKEN_SECRETS that
// fence.ParseSecrets refuses is a usage error (64), with one line that
// names the variable but not the secret; the key is not taken and the
// program does not run.
func TestInvalidTokenSecretsAreUsageErrors(t *testing.T) {
	t.Parallel()
	secret := testSecret(t, 32)
	for _, tc := range []struct{ name, secrets string }{
		{"no id", secret},
		{"not base64", "k1=" + secret + "!"},
		{"short secret", "k1=" + testSecret(t, 31)},
		{"bad key id", "K1=" + secret},
		{"repeated id", "k1=" + secret + ",k1=" + secret},
		{"empty item", "k1=" + secret + ","},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := "bad-secrets-" + strings.ReplaceAll(tc.name, " ", "-")
			marker := filepath.Join(t.TempDir(), "ran")
			p := startEnv(t, []string{envSecrets + "=" + tc.secrets}, "run", "--redis", sharedAddr, "--key", key, "--",
				"/bin/sh", "-c", "touch "+marker)
			code := p.wait(t)
			stderr := p.stderr.String()
			assert.Equal(t, exitUsage, code, "stderr: %s", stderr)
			assertOneLine(t, stderr)
			assert.Contains(t, stderr, envSecrets)
			assert.NotContains(t, stderr, strings.TrimRight(secret, "="), "the usage error shows the secret")
			assert.NoFileExists(t, marker, "the program ran")
			inspectUnseen(t, "--redis", sharedAddr, "--key", key) // the key was not taken
		})
	}
}

func TestProgramThatCannotRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data.txt")
	require.NoError(t, os.WriteFile(notExec, []byte("echo hi\n"), 0o644))
	for _, tc := range []struct {
		name    string
		program string
		want    int
	}{
		{"not on PATH", "lockwatch-no-such-program", exitNotFound},
		{"missing path", filepath.Join(dir, "missing"), exitNotFound},
		{"not executable", notExec, exitNoExec},
		{"directory", dir, exitNoExec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := "cannot-run-" + tc.name
			code, _, stderr := lockwatchRun(t, "run", "--redis", sharedAddr, "--key", key, "--", tc.program)
			assert.Equal(t, tc.want, code, "stderr: %s", stderr)
			assertOneLine(t, stderr)
			// Nothing was taken for a program that cannot run.
			inspectUnseen(t, "--redis", sharedAddr, "--key", key)
		})
	}
}

func TestUnreachableRedisExits69(t *testing.T) {
	t.Parallel()
	addr := integration.FreeLoopbackAddr(t)
	marker := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{
		{"run", "--redis", addr, "--key", "k", "--", "/bin/sh", "-c", "touch " + marker},
		{"run", "--redis", "redis://" + addr + "/0", "--key", "k", "--", "/bin/sh", "-c", "touch " + marker},
		{"inspect", "--redis", addr, "--key", "k"},
		{"release", "--force", "--redis", addr, "--key", "k"},
		{"inspect", "--cluster", addr, "--key", "k"},
	} {
		code, stdout, stderr := lockwatchRun(t, args...)
		assert.Equal(t, exitUnavailable, code, "%v: %s", args, stderr)
		assert.Empty(t, stdout)
		assertOneLine(t, stderr)
		assert.Contains(t, stderr, "lockwatch: redis ")
		assert.Contains(t, stderr, addr)
		assert.Contains(t, stderr, "connection refused")
	}
	assert.NoFileExists(t, marker, "the program ran without a lease")
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/integration"
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
		{"run grace past the safety margin", []string{"run", r, "--ttl", "1s", "--grace", "2s", "--key", "usage-grace", "--", "true"}, "safety margin"},
		{"run grace just past the safety margin", []string{"run", r, "--ttl", "1s", "--grace", "51ms", "--key", "usage-grace", "--", "true"}, "safety margin"},
		{"inspect without key", []string{"inspect", r}, "--key is required"},
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
		{[]string{"-h"}, []string{"run", "inspect", "release"}},
		{[]string{"help"}, []string{"run", "inspect", "release"}},
		{[]string{"help", "run"}, []string{"LOCKWATCH_FENCE"}},
		{[]string{"run", "-h"}, []string{"LOCKWATCH_FENCE", "--grace", "TTL/20", "foreground", "A longer --grace is refused (64)", "watchdog", "one job", "subreaper", "Not supervised",
			" 64 ", " 69 ", " 70 ", " 75 ", " 76 ", " 79 ", " 126 ", " 127 ", "128+n"}},
		{[]string{"inspect", "-h"}, []string{"--json", "ttl_ms", " 69 "}},
		{[]string{"release", "-h"}, []string{"--force", "force_released", " 1 ", " 69 "}},
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
			info := inspectJSON(t, "--redis", sharedAddr, "--key", key)
			assert.False(t, info.Held)
			assert.Zero(t, info.Fence)
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

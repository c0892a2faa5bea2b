package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
)

// TestUnknownAcquireExits76 slows the link so that the acquire's reply
// comes after its timeout (TTL/5): the result is unknown, the program must
// not run, and lockwatch exits 76 once its Locker has dealt with the key.
func TestUnknownAcquireExits76(t *testing.T) {
	t.Parallel()
	proxy := faultproxy.Start(t, sharedAddr)
	// A round trip of at least 200ms: the PING (3s) and the safety check
	// (unbounded) answer, the acquire (timeout 40ms) does not.
	proxy.Set(faultproxy.Delay(100 * time.Millisecond))
	marker := filepath.Join(t.TempDir(), "ran")
	code, _, stderr := lockwatchRun(t, "run", "--redis", proxy.Addr(), "--key", "unknown", "--ttl", "200ms",
		"--", "/bin/sh", "-c", "touch "+marker)
	t.Logf("stderr: %s", stderr)
	assert.Equal(t, exitUnknown, code, stderr)
	assert.Contains(t, stderr, "unknown")
	assert.NoFileExists(t, marker, "the program ran on an unknown acquire")
	// Cleaned up before lockwatch exited, or expired by its TTL (200ms) if
	// the clean-up, through the same slow proxy, got no answer. Each look
	// is a lockwatch process, and one built with -race sleeps a second
	// before it exits (GORACE's atexit_sleep_ms), so the bound is generous:
	// a key left without a TTL, or with a TTL longer than asked, still
	// fails it. The looks run on the test's goroutine, so none outlives
	// the test (a look cut off by the end of the test failed it before).
	// The acquire may not have reached Redis yet: then Redis has nothing
	// of the key, and inspect exits 66.
	held := func() bool {
		code, stdout, stderr := lockwatchRun(t, "inspect", "--json", "--redis", sharedAddr, "--key", "unknown")
		require.Contains(t, []int{exitOK, exitNeverSeen}, code, stderr)
		var info keyJSON
		require.NoError(t, json.Unmarshal([]byte(stdout), &info), stdout)
		return info.Held
	}
	deadline := time.Now().Add(10 * time.Second)
	for held() {
		if time.Now().After(deadline) {
			t.Fatal("the unknown acquire's key was still held 10 s after lockwatch exited (TTL 200ms)")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockwatch/lockwatch/internal/faultproxy"
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
	// the clean-up, through the same slow proxy, got no answer.
	assert.Eventually(t, func() bool {
		return !inspectJSON(t, "--redis", sharedAddr, "--key", "unknown").Held
	}, 2*time.Second, 20*time.Millisecond, "the unknown acquire's key stayed held")
}

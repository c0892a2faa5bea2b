package redistest

import (
	"os"
	"os/exec"
	"testing"
)

// requireEnv names the variable CI sets so that a missing redis-server fails
// the build instead of skipping every integration test.
const requireEnv = "LOCKWATCH_REQUIRE_INTEGRATION"

const serverBinary = "redis-server"

// Require reports whether integration servers can be used. If redis-server
// is not on PATH: with env LOCKWATCH_REQUIRE_INTEGRATION=1 it calls t.Fatalf
// (never a silent skip in CI), otherwise t.Skip.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath(serverBinary); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("redistest: %s=1 but %s is unavailable: %v", requireEnv, serverBinary, err)
			return
		}
		t.Skipf("redistest: %s not on PATH (set %s=1 to make this a failure): %v", serverBinary, requireEnv, err)
	}
}

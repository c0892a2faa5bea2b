package redistest

import (
	"os/exec"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// requireEnv is integration.RequireEnv, which the helpers here name in
// their messages.
const requireEnv = integration.RequireEnv

const serverBinary = "redis-server"

// Require reports whether integration servers can be used. If redis-server
// is not on PATH: with env LOCKWATCH_REQUIRE_INTEGRATION=1 it calls t.Fatalf
// (never a silent skip in CI), otherwise t.Skip.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath(serverBinary); err != nil {
		integration.Unavailable(t, "redistest", serverBinary, err)
	}
}

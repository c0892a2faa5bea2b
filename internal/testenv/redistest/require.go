package redistest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// requireEnv is integration.RequireEnv, which the helpers here name in
// their messages.
const requireEnv = integration.RequireEnv

// ServerEnv names the server binary every helper here starts, in every
// mode (a sentinel is the same binary with --sentinel): make test sets it
// to valkey-server for its Valkey pass, so one suite tests both servers.
const ServerEnv = "LOCKWATCH_REDIS_SERVER"

// serverBinary is the binary ServerEnv names, redis-server by default.
func serverBinary() string {
	if bin := os.Getenv(ServerEnv); bin != "" {
		return bin
	}
	return "redis-server"
}

// Require reports whether integration servers can be used. If the server
// binary (redis-server, or ServerEnv's) is not on PATH: with env
// LOCKWATCH_REQUIRE_INTEGRATION=1 it calls t.Fatalf (never a silent skip
// in CI), otherwise t.Skip.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath(serverBinary()); err != nil {
		integration.Unavailable(t, "redistest", serverBinary(), err)
	}
}

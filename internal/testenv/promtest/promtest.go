// Package promtest finds the Prometheus tools the tests run for real:
// promtool (rule checks, rule unit tests, PromQL parsing), the prometheus
// server (end-to-end checks) and amtool (Alertmanager configuration checks),
// from Debian's prometheus and prometheus-alertmanager packages, which make
// test installs.
package promtest

import (
	"os"
	"os/exec"
	"testing"
)

// Promtool returns the path of promtool.
func Promtool(t testing.TB) string { return require(t, "promtool") }

// Prometheus returns the path of the prometheus server, for end-to-end
// checks against a real one on loopback.
func Prometheus(t testing.TB) string { return require(t, "prometheus") }

// Amtool returns the path of amtool.
func Amtool(t testing.TB) string { return require(t, "amtool") }

// require finds a tool on PATH. Missing: a failure with
// LOCKWATCH_REQUIRE_INTEGRATION=1 (as in make test), a skip otherwise.
func require(t testing.TB, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err == nil {
		return path
	}
	if os.Getenv("LOCKWATCH_REQUIRE_INTEGRATION") == "1" {
		t.Fatalf("promtest: LOCKWATCH_REQUIRE_INTEGRATION=1 but %s is unavailable: %v", tool, err)
	}
	t.Skipf("promtest: %s not on PATH (set LOCKWATCH_REQUIRE_INTEGRATION=1 to fail instead): %v", tool, err)
	return ""
}

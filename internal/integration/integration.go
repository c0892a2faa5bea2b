// Package integration is what the test helpers for real servers
// (internal/redistest, pgtest, mysqltest) share: how a missing server
// skips a test, or fails it in CI.
package integration

import (
	"os"
	"sync"
	"testing"
)

// RequireEnv names the variable CI sets (make test does) so that a missing
// server fails the build instead of skipping every integration test.
const RequireEnv = "LOCKWATCH_REQUIRE_INTEGRATION"

// Required reports whether RequireEnv is set.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Unavailable ends t because server cannot be used (err says why): a
// failure when Required, a skip otherwise. prefix names the helper.
func Unavailable(t testing.TB, prefix, server string, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s: %s=1 but %s is unavailable: %v", prefix, RequireEnv, server, err)
		return
	}
	t.Skipf("%s: %s unavailable (set %s=1 to make this a failure): %v", prefix, server, RequireEnv, err)
}

// Probe remembers whether a server answered its first probe: every test of
// a process shares one server, so a server that is down costs one connect
// timeout, not one per test.
type Probe struct {
	once sync.Once
	err  error
}

// Require runs probe once per process, and ends t with Unavailable when
// it failed.
func (p *Probe) Require(t testing.TB, prefix, server string, probe func() error) {
	t.Helper()
	p.once.Do(func() { p.err = probe() })
	if p.err != nil {
		Unavailable(t, prefix, server, p.err)
	}
}

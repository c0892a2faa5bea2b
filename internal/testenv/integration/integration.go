// Package integration is what the test helpers for real servers
// (internal/testenv/redistest, pgtest, mysqltest) share: how a missing server
// skips a test, or fails it in CI.
package integration

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strings"
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

// FreeLoopbackAddr is a 127.0.0.1 host:port nothing listens on, for a
// server a test starts.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("integration: no free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// DSN returns the value of env, or def when it is unset or empty: where the
// tests find a database server.
func DSN(env, def string) string {
	if dsn := os.Getenv(env); dsn != "" {
		return dsn
	}
	return def
}

// Name returns <prefix>_<test name, folded to [a-z0-9_]>_<64 random bits>,
// at most limit bytes (the server's identifier limit): a name for a
// schema or database of one test's own, unique, valid unquoted whatever
// the server's case rules, and traceable to its test.
func Name(prefix, test string, limit int) string {
	readable := limit - len(prefix) - 2 - 16 // two underscores, 16 hex digits
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		if b.Len() >= readable {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	var random [8]byte
	_, _ = rand.Read(random[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + "_" + b.String() + "_" + hex.EncodeToString(random[:])
}

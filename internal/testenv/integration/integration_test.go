package integration

import (
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingTB stands in for testing.T so that the skip and fatal paths can
// be observed without ending the real test.
type recordingTB struct {
	testing.TB
	skipped, fatal bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Skipf(string, ...any)  { r.skipped = true }
func (r *recordingTB) Fatalf(string, ...any) { r.fatal = true }

func TestProbeRunsOnceAndSkipsOrFails(t *testing.T) {
	var p Probe
	calls := 0
	down := func() error { calls++; return errors.New("connection refused") }
	for _, tc := range []struct {
		env            string
		skipped, fatal bool
	}{{"", true, false}, {"1", false, true}} {
		t.Setenv(RequireEnv, tc.env)
		rec := &recordingTB{TB: t}
		p.Require(rec, "test", "a server", down)
		assert.Equal(t, tc.skipped, rec.skipped, "skipped with %s=%q", RequireEnv, tc.env)
		assert.Equal(t, tc.fatal, rec.fatal, "failed with %s=%q", RequireEnv, tc.env)
	}
	assert.Equal(t, 1, calls, "one probe per process")

	var up Probe
	rec := &recordingTB{TB: t}
	up.Require(rec, "test", "a server", func() error { return nil })
	assert.False(t, rec.skipped || rec.fatal)
}

// Names fit the identifier limits of PostgreSQL (63) and MySQL (64), are
// valid unquoted, and unique, whatever the test's name.
func TestName(t *testing.T) {
	for prefix, limit := range map[string]int{"pgtest": 63, "mysqltest": 64} {
		valid := regexp.MustCompile(`^` + prefix + `_[a-z0-9_]*_[0-9a-f]{16}$`)
		seen := map[string]bool{}
		for _, test := range []string{"", "TestX", "TestX/sub-case #2", "Ünïcode/測試", strings.Repeat("TestLong", 30)} {
			s := Name(prefix, test, limit)
			assert.Regexp(t, valid, s, test)
			assert.LessOrEqual(t, len(s), limit, "fits the identifier limit: %q", test)
			assert.False(t, seen[s], "unique: %q", s)
			seen[s] = true
		}
		first, second := Name(prefix, "TestX", limit), Name(prefix, "TestX", limit)
		assert.NotEqual(t, first, second)
	}
}

// TestFreeLoopbackAddr: a loopback address a server can listen on.
func TestFreeLoopbackAddr(t *testing.T) {
	addr := FreeLoopbackAddr(t)
	host, _, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	l, err := net.Listen("tcp", addr)
	if assert.NoError(t, err, "nothing else should listen on %s", addr) {
		assert.NoError(t, l.Close())
	}
}

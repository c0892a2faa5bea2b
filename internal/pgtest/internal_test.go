package pgtest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchemaName(t *testing.T) {
	valid := regexp.MustCompile(`^pgtest_[a-z0-9_]*_[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for _, name := range []string{"", "TestX", "TestX/sub-case #2", "Ünïcode/測試", strings.Repeat("TestLong", 30)} {
		s := schemaName(name)
		assert.Regexp(t, valid, s, name)
		assert.LessOrEqual(t, len(s), 63, "fits NAMEDATALEN: %q", name)
		assert.False(t, seen[s], "unique: %q", s)
		seen[s] = true
	}
	assert.NotEqual(t, schemaName("TestX"), schemaName("TestX"))
}

// TestProbeUnreachable: what Require decides on for a server that is down.
func TestProbeUnreachable(t *testing.T) {
	// Port 1 (tcpmux) is privileged and unused on a test machine: refused.
	err := probe("postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5")
	require.Error(t, err)
	require.Error(t, probe("postgres://%zz"), "a malformed DSN is reported, not a panic")
}

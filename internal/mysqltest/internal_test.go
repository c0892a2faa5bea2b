package mysqltest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDatabaseName(t *testing.T) {
	valid := regexp.MustCompile(`^mysqltest_[a-z0-9_]*_[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for _, name := range []string{"", "TestX", "TestX/sub-case #2", "Ünïcode/測試", strings.Repeat("TestLong", 30)} {
		s := databaseName(name)
		assert.Regexp(t, valid, s, name)
		assert.LessOrEqual(t, len(s), 64, "fits MySQL's identifier limit: %q", name)
		assert.False(t, seen[s], "unique: %q", s)
		seen[s] = true
	}
	assert.NotEqual(t, databaseName("TestX"), databaseName("TestX"))
}

// TestProbeUnreachable: what Require decides on for a server that is down.
func TestProbeUnreachable(t *testing.T) {
	// Port 1 (tcpmux) is privileged and unused on a test machine: refused.
	require.Error(t, probe("root@tcp(127.0.0.1:1)/test"))
	require.Error(t, probe("root@tcp(127.0.0.1:3306"), "a malformed DSN is reported, not a panic")
	assert.ErrorContains(t, probe("root@tcp(127.0.0.1:3306)/test?clientFoundRows=true"), "clientFoundRows")
}

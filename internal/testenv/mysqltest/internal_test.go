package mysqltest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProbeUnreachable: what Require decides on for a server that is down.
func TestProbeUnreachable(t *testing.T) {
	// Port 1 (tcpmux) is privileged and unused on a test machine: refused.
	require.Error(t, probe("root@tcp(127.0.0.1:1)/test"))
	require.Error(t, probe("root@tcp(127.0.0.1:3306"), "a malformed DSN is reported, not a panic")
	assert.ErrorContains(t, probe("root@tcp(127.0.0.1:3306)/test?clientFoundRows=true"), "clientFoundRows")
}

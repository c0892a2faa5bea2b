package pgtest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProbeUnreachable: what Require decides on for a server that is down.
func TestProbeUnreachable(t *testing.T) {
	// Port 1 (tcpmux) is privileged and unused on a test machine: refused.
	err := probe("postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5")
	require.Error(t, err)
	require.Error(t, probe("postgres://%zz"), "a malformed DSN is reported, not a panic")
}

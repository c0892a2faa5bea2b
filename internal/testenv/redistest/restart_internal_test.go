package redistest

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRestartWaitsForItsPort(t *testing.T) {
	t.Parallel()
	s := Start(t)
	require.NoError(t, s.Kill())
	squatter, err := net.Listen("tcp", s.Addr())
	require.NoError(t, err, "the port of a killed server is free again")

	done := make(chan error, 1)
	go func() { done <- s.Restart() }()
	// Release the port only once Restart has demonstrably failed to bind it.
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(s.logPath)
		return strings.Contains(string(b), "Address already in use")
	}, 10*time.Second, pollInterval)
	require.NoError(t, squatter.Close())

	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(startTimeout):
		t.Fatal("Restart did not return after its port was released")
	}
	_, err = s.Do(t.Context(), "PING")
	assert.NoError(t, err)
}

func TestClusterEnabled(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--cluster-enabled"}, false},
		{[]string{"--cluster-enabled", "no"}, false},
		{[]string{"--cluster-enabled", "yes"}, true},
		{[]string{"--hz", "10", "--cluster-enabled", "YES"}, true},
	} {
		assert.Equal(t, tc.want, clusterEnabled(tc.args), "%q", tc.args)
	}
}

func TestParseInfo(t *testing.T) {
	info := parseInfo("# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n\r\n# Other\r\nx:a:b\r\n")
	assert.Equal(t, map[string]string{"role": "slave", "master_host": "127.0.0.1", "x": "a:b"}, info)
}

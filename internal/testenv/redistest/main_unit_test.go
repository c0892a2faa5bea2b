package redistest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without redis-server, a package whose TestMain is Main still runs its
// unit tests and says so, skips its integration tests one by one, and skips
// its runnable examples (which need the shared server); with
// LOCKWATCH_REQUIRE_INTEGRATION=1 it fails. The lease package stands for
// every such package: its test binary runs with a PATH that has only go.
func TestMainWithoutRedisServer(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	run := func(require string) (string, error) {
		cmd := exec.Command(goBin, "test", "-count=1", "-v",
			"-run", "^(TestBackoffIsBounded|TestUnknownAcquire|Example)$", "../../../lease/")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(goBin), "LOCKWATCH_REQUIRE_INTEGRATION="+require, "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("")
	require.NoError(t, err, out)
	assert.Contains(t, out, "--- PASS: TestBackoffIsBounded", "the unit test runs")
	assert.Contains(t, out, "--- SKIP: TestUnknownAcquire", "the integration test skips, by name")
	assert.NotContains(t, out, "=== RUN   Example", "the runnable example is skipped")
	assert.Contains(t, out, "unit tests only")

	out, err = run("1")
	require.Error(t, err, "LOCKWATCH_REQUIRE_INTEGRATION=1 without redis-server must fail")
	assert.Contains(t, out, "LOCKWATCH_REQUIRE_INTEGRATION=1 but redis-server is unavailable")
}

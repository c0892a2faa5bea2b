package main

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain doubles as a holder process and as a lockwatch run holder's
// program: the runs re-execute this test binary as both, which childEnv
// and programEnv tell apart. As the parent it fails the package when a
// goroutine outlives the tests, and removes the lockwatch the runs ran.
func TestMain(m *testing.M) {
	if isChild() {
		os.Exit(childMain())
	}
	if isProgram() {
		os.Exit(programMain())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if testBin.dir != "" {
			_ = os.RemoveAll(testBin.dir)
		}
		os.Exit(code)
	}))
}

// testBin is cmd/lockwatch, built once for all the package's runs.
var testBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// testLockwatch returns the lockwatch binary of the tests' run holders.
func testLockwatch(t *testing.T) string {
	t.Helper()
	testBin.once.Do(func() {
		if testBin.dir, testBin.err = os.MkdirTemp("", "lockwatch-chaos-bin-"); testBin.err == nil {
			testBin.path, testBin.err = buildLockwatch(testBin.dir)
		}
	})
	require.NoError(t, testBin.err)
	return testBin.path
}

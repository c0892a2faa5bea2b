package alerts_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives the tests (promtool
// and amtool run as child processes, waited for).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package kubernetes_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives the tests (promtool
// runs as a child process, waited for).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

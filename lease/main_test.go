package lease

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when any goroutine outlives the tests: a
// renewal scheduler, a batch or a clean-up left running is a leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

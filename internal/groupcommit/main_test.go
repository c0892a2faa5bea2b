package groupcommit

import (
	"testing"

	"go.uber.org/goleak"
)

// A detached pipeline or a deadline's timer must not outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

package redistest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The helpers start goroutines to reap processes and go-redis clients run
// their own; none of them may outlive the tests that created them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

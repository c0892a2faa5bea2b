package pgtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// database/sql runs a connection opener per handle and pgx watches contexts
// in goroutines; none of them may outlive the test that opened the handle.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package mysqltest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// database/sql runs a connection opener per handle and go-sql-driver/mysql
// watches contexts in a goroutine per connection; none of them may outlive
// the test that opened the handle.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package faultproxy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Close promises that no proxy goroutine outlives it; goleak holds it to that.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain doubles as a holder process: the runs re-execute this test
// binary as their child holders, which childEnv tells apart. As the parent
// it fails the package when a goroutine outlives the tests.
func TestMain(m *testing.M) {
	if isChild() {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(m)
}

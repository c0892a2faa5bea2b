package model

import (
	"os"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestMain fails the package when a goroutine outlives the tests, and when
// LOCKWATCH_REQUIRE_INTEGRATION=1 but redis-server is missing.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m, func(string) {})) }

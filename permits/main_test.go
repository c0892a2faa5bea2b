package permits_test

import (
	"os"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestMain starts the private redis-server the runnable examples use, and
// fails the package when a goroutine outlives the tests.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m, func(a string) { addr = a })) }

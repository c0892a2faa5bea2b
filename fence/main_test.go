package fence_test

import (
	"os"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// addr is the redis-server the runnable examples use.
var addr string

// TestMain starts the private redis-server the runnable examples use, and
// fails the package when any goroutine outlives the tests (a Redis or
// database client left open is a leak).
func TestMain(m *testing.M) { os.Exit(redistest.Main(m, func(a string) { addr = a })) }

package fence_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/goleak"

	"github.com/lockwatch/lockwatch/internal/redistest"
)

// addr is the redis-server the runnable examples use.
var addr string

// TestMain starts the private redis-server the runnable examples use, and
// fails the package when any goroutine outlives the tests (a Redis or
// database client left open is a leak).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("LOCKWATCH_REQUIRE_INTEGRATION") != "1" {
		fmt.Println("fence: redis-server not on PATH; skipping (set LOCKWATCH_REQUIRE_INTEGRATION=1 to fail instead)")
		return 0
	}
	dir, err := os.MkdirTemp("", "fence-examples-")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := redistest.Launch(dir)
	if err != nil {
		fmt.Println("fence: start the examples' redis-server:", err)
		return 1
	}
	addr = srv.Addr()
	code := m.Run()
	if err := srv.Kill(); err != nil {
		fmt.Println("fence: stop the examples' redis-server:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Println("fence: goroutines outlived the tests:", err)
			code = 1
		}
	}
	return code
}

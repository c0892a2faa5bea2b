package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a package's tests with one private redis-server for its runnable
// examples (useAddr receives its address before any test runs) and fails the
// package when a goroutine outlives the tests. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m, func(a string) { addr = a })) }
//
// Without redis-server it skips the package, or fails it when
// LOCKWATCH_REQUIRE_INTEGRATION=1.
func Main(m *testing.M, useAddr func(addr string)) int {
	if _, err := exec.LookPath(serverBinary); err != nil {
		if os.Getenv(requireEnv) == "1" {
			fmt.Printf("redistest: %s=1 but %s is unavailable: %v\n", requireEnv, serverBinary, err)
			return 1
		}
		fmt.Printf("redistest: %s not on PATH; skipping the package (set %s=1 to fail instead)\n", serverBinary, requireEnv)
		return 0
	}
	dir, err := os.MkdirTemp("", "redistest-main-")
	if err != nil {
		fmt.Println("redistest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := Launch(dir)
	if err != nil {
		fmt.Println("redistest: start the examples' redis-server:", err)
		return 1
	}
	useAddr(srv.Addr())
	code := m.Run()
	if err := srv.Kill(); err != nil {
		fmt.Println("redistest: stop the examples' redis-server:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Println("redistest: goroutines outlived the tests:", err)
			code = 1
		}
	}
	return code
}

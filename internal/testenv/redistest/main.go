package redistest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a package's tests with one private redis-server for its runnable
// examples and benchmarks (useAddr receives its address before any test
// runs) and fails the package when a goroutine outlives the tests. Use it
// from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m, func(a string) { addr = a })) }
//
// Without redis-server the package fails when LOCKWATCH_REQUIRE_INTEGRATION=1.
// Otherwise its unit tests still run, its integration tests skip one by one
// (Start calls Require), and the runnable examples and benchmarks, which
// need the shared server and cannot skip themselves, are skipped by name:
// "go test ./..." on a laptop without Redis says what it ran.
func Main(m *testing.M, useAddr func(addr string)) int {
	if _, err := exec.LookPath(serverBinary()); err != nil {
		if os.Getenv(requireEnv) == "1" {
			fmt.Printf("redistest: %s=1 but %s is unavailable: %v\n", requireEnv, serverBinary(), err)
			return 1
		}
		fmt.Printf("redistest: %s not on PATH: unit tests only, examples and benchmarks skipped (set %s=1 to fail instead)\n", serverBinary(), requireEnv)
		if err := flag.Set("test.skip", "^(Example|Benchmark)"); err != nil {
			fmt.Println("redistest:", err)
			return 1
		}
		return withoutLeaks(m.Run())
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
	return withoutLeaks(code)
}

// withoutLeaks turns a passing run into a failure when a goroutine outlived
// the tests.
func withoutLeaks(code int) int {
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Println("redistest: goroutines outlived the tests:", err)
			return 1
		}
	}
	return code
}

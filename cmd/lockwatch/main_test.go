package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

var (
	// bin is the lockwatch binary built by TestMain: the tests run it as a
	// user would, so exit statuses, signals and process groups are real.
	bin string
	// sharedAddr is the redis-server of the tests that neither pause nor
	// kill theirs; each uses keys of its own.
	sharedAddr string
)

// TestMain builds the binary, starts the shared redis-server and fails the
// package when a goroutine outlives the tests. Started as a test program
// (testprogram_test.go), it runs that instead.
func TestMain(m *testing.M) {
	if name := os.Getenv(testProgramEnv); name != "" {
		// Not os.Exit: under the race detector its finalization can
		// take longer than a test's safety margin.
		syscall.Exit(runTestProgram(name))
	}
	dir, err := os.MkdirTemp("", "lockwatch-bin-")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "lockwatch")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Println("build lockwatch:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := redistest.Main(m, func(a string) { sharedAddr = a })
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// procTimeout bounds every lockwatch process of the tests, so that a hung
// one fails its test instead of the package's deadline.
const procTimeout = 30 * time.Second

// proc is one lockwatch process.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	code           int
}

// start runs lockwatch with args.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with env added to lockwatch's environment (and so to
// its program's).
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = newCmd(args...)
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.launch(t)
	return p
}

// newCmd is lockwatch with args, in an environment without the variables
// that would point it elsewhere.
func newCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv()
	// A program left behind holding the pipes must not hang Wait.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// launch starts p.cmd and reaps it in the background. A t.Cleanup kills
// it if the test did not wait for it.
func (p *proc) launch(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// wait waits for the process to exit and returns its status.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(procTimeout):
		t.Fatalf("lockwatch %v did not exit in %v; stderr: %s", p.cmd.Args[1:], procTimeout, p.stderr.String())
		return -1
	}
}

// lockwatch runs lockwatch to the end: its status, stdout and stderr.
func lockwatchRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	p := start(t, args...)
	code := p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case envRedisURL, envPassword, envRedisCLIAuth, envSentinelPassword, envFence, envFenceToken, envKey, envPermit, envSecrets:
		default:
			env = append(env, kv)
		}
	}
	return env
}

// waitFile waits until path exists with content, and returns it trimmed.
func waitFile(t *testing.T, path string, p *proc) string {
	t.Helper()
	deadline := time.Now().Add(procTimeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b))
		}
		if p != nil {
			select {
			case <-p.done:
				t.Fatalf("lockwatch exited %d before %s was written; stderr: %s", p.code, filepath.Base(path), p.stderr.String())
			default:
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s not written in %v", path, procTimeout)
	return ""
}

// holderScript is a program that writes its fence to $DIR/fence, records
// the time its TERM trap runs in $DIR/term (date +%s%N), and otherwise runs
// until $DIR/stop exists, or 20 s at most, so that nothing outlives a
// failed test for long.
const holderScript = `trap 'date +%s%N > "$DIR/term"; exit 0' TERM
echo "$LOCKWATCH_FENCE" > "$DIR/fence.tmp"; mv "$DIR/fence.tmp" "$DIR/fence"
i=0
while [ ! -e "$DIR/stop" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`

// holder starts lockwatch run on key with holderScript, in dir, and waits
// until the program runs. It returns the process and its fence.
func holder(t *testing.T, dir string, conn []string, key string, flags ...string) (*proc, int64) {
	t.Helper()
	args := append(append([]string{"run"}, conn...), "--key", key)
	args = append(append(args, flags...), "--", "/bin/sh", "-c", holderScript)
	p := startEnv(t, []string{"DIR=" + dir}, args...)
	fence, err := strconv.ParseInt(waitFile(t, filepath.Join(dir, "fence"), p), 10, 64)
	require.NoError(t, err)
	return p, fence
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	t.Cleanup(cancel)
	return ctx
}

func assertOneLine(t *testing.T, stderr string) {
	t.Helper()
	assert.True(t, strings.HasPrefix(stderr, "lockwatch: "), "stderr %q", stderr)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "stderr %q is not one line", stderr)
}

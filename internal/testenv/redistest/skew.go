package redistest

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// clockShimSource moves a process's wall clock; see its comment.
//
//go:embed clockshim/clockshim.c
var clockShimSource []byte

const compiler = "gcc"

var shim struct {
	once sync.Once
	path string
	err  error
}

// clockShim builds the shim once per process into the user's cache
// directory (lockwatch-redistest, mode 0700: a library preloaded into
// redis-server must not be one another user could have put there), named
// by its source's hash, so that concurrent test binaries share it and a
// changed source is rebuilt.
func clockShim() (string, error) {
	shim.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		home := filepath.Join(cache, "lockwatch-redistest")
		if err := os.MkdirAll(home, 0o700); err != nil {
			shim.err = err
			return
		}
		if fi, err := os.Stat(home); err != nil || fi.Mode().Perm()&0o077 != 0 {
			shim.err = fmt.Errorf("redistest: %s must be private to its user (mode 0700)", home)
			return
		}
		sum := sha256.Sum256(clockShimSource)
		path := filepath.Join(home, "clockshim-"+hex.EncodeToString(sum[:6])+".so")
		if _, err := os.Stat(path); err == nil {
			shim.path = path
			return
		}
		dir, err := os.MkdirTemp(home, "build-")
		if err != nil {
			shim.err = err
			return
		}
		defer os.RemoveAll(dir)
		src, out := filepath.Join(dir, "clockshim.c"), filepath.Join(dir, "clockshim.so")
		if err := os.WriteFile(src, clockShimSource, 0o644); err != nil {
			shim.err = err
			return
		}
		if b, err := exec.Command(compiler, "-O2", "-shared", "-fPIC", "-o", out, src).CombinedOutput(); err != nil {
			shim.err = fmt.Errorf("redistest: build the clock shim: %v\n%s", err, b)
			return
		}
		// A rename within one file system is atomic: another process
		// building the same shim meanwhile loses nothing.
		if err := os.Rename(out, path); err != nil {
			shim.err = err
			return
		}
		shim.path = path
	})
	return shim.path, shim.err
}

// StartSkewed is Start for a server whose wall clock is offset from the
// machine's (negative: behind): TIME, key expiry and everything else
// redis-server reads from CLOCK_REALTIME is moved, its monotonic clocks
// are not, as on a host whose NTP is off. The offset survives Restart. It
// needs gcc (to build the shim once) and fails or skips like Require
// without it.
func StartSkewed(t testing.TB, offset time.Duration, extraArgs ...string) *Server {
	t.Helper()
	Require(t)
	if _, err := exec.LookPath(compiler); err != nil {
		integration.Unavailable(t, "redistest", compiler, err)
	}
	env, err := skewEnv(offset)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	return startWith(t, env, extraArgs)
}

// LaunchSkewed is StartSkewed for code that has no testing.TB, like
// Launch.
func LaunchSkewed(dir string, offset time.Duration, extraArgs ...string) (*Server, error) {
	env, err := skewEnv(offset)
	if err != nil {
		return nil, err
	}
	return launchWith(dir, env, extraArgs)
}

func skewEnv(offset time.Duration) ([]string, error) {
	path, err := clockShim()
	if err != nil {
		return nil, err
	}
	return []string{"LD_PRELOAD=" + path, "REDISTEST_CLOCK_OFFSET_NS=" + strconv.FormatInt(int64(offset), 10)}, nil
}

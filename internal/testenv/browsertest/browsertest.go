// Package browsertest loads pages in a real headless Chromium for tests:
// the rendered DOM (--dump-dom) and a screenshot (--screenshot), so that a
// test sees what an operator's browser makes of a page, not only the bytes a
// server sent.
//
// Chromium is Debian's package chromium (/usr/bin/chromium, installed by
// make deps). Without it a test is skipped, or fails when
// LOCKWATCH_REQUIRE_INTEGRATION=1, as for every other real server. Every run
// gets a new profile directory in t.TempDir(), the flags that keep it off
// the network (no sync, component updates, background requests or QUIC)
// and a timeout; its whole process group is killed when it ends, so no
// renderer outlives the test.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// Timeout bounds one Chromium run: a cold start on a loaded 2-core machine
// takes a few seconds.
const Timeout = 60 * time.Second

// binaries are where Chromium is looked for, first found first used.
var binaries = []string{"chromium", "chromium-browser", "google-chrome"}

// Chromium returns the path of the Chromium binary, or ends t: skipped, or
// failed when LOCKWATCH_REQUIRE_INTEGRATION=1, saying how to install it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, b := range binaries {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	integration.Unavailable(t, "browsertest", "chromium",
		errors.New("no chromium on PATH: make deps installs it (apt-get install chromium)"))
	return ""
}

// DumpDOM loads url and returns the DOM Chromium rendered, serialized as
// HTML.
func DumpDOM(t testing.TB, url string) string {
	t.Helper()
	return string(run(t, "--dump-dom", url))
}

// Screenshot loads url in a window of width×height pixels and returns the
// PNG Chromium took of it.
func Screenshot(t testing.TB, url string, width, height int) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "screenshot.png")
	run(t, "--screenshot="+file, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), url)
	png, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("browsertest: chromium wrote no screenshot: %v", err)
	}
	return png
}

// run runs Chromium headless with args and returns its stdout. A failure or
// a timeout fails t with the tail of its stderr.
func run(t testing.TB, args ...string) []byte {
	t.Helper()
	bin := Chromium(t)
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + profile,
	}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+profile) // nothing lands in the real home
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ownGroup(cmd)
	err := cmd.Run()
	killGroup(cmd) // its renderers and helpers, should any have outlived it
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", Timeout)
	}
	if err != nil {
		t.Fatalf("browsertest: chromium %v: %v\n%s", args, err, tail(stderr.Bytes(), 4000))
	}
	return stdout.Bytes()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

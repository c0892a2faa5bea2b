package main

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// pageCommand is a command the debug page shows in a row (its note shows
// one with HASH).
var pageCommand = regexp.MustCompile(`<code>lockwatch (inspect --key-hash [0-9a-f]{32}[^<]*)</code>`)

// pageCommands reads lk's debug page as an operator does and returns the
// commands its rows show, as arguments.
func pageCommands(t *testing.T, lk *lease.Locker) [][]string {
	t.Helper()
	srv := httptest.NewServer(debugpage.Handler(lk))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var all [][]string
	for _, m := range pageCommand.FindAllStringSubmatch(string(body), -1) {
		all = append(all, strings.Fields(html.UnescapeString(m[1])))
	}
	return all
}

// TestDebugPageCommandsWork: the command the debug page shows in a
// lease's row and in a permit's rows, copied as is (plus the address),
// inspects that lease and that permit, in a namespace of their own; the
// same flags take the lease with release --force.
func TestDebugPageCommandsWork(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	lk, err := operatorLocker(t).With(lease.Config{Namespace: "pagecmd"})
	require.NoError(t, err)
	l, err := lk.Acquire(ctx, "order:o7")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()
	sem, err := permits.New(lk, "exports:o7", permits.Config{Limit: 3, Name: "exports"})
	require.NoError(t, err)
	p, err := sem.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = p.Release(ctx) }()

	cmds := pageCommands(t, lk)
	require.Len(t, cmds, 3, "the lease's row, the permit's lease's row, the permit's row")
	var leaseCmd []string
	for _, cmd := range cmds {
		assert.Contains(t, cmd, "--namespace")
		info := inspectJSON(t, append(cmd[1:], "--redis", sharedAddr)...)
		assert.True(t, info.Held, cmd)
		assert.Equal(t, "pagecmd", info.Namespace)
		if info.Permit == nil {
			assert.Equal(t, l.Fence(), info.Fence, cmd)
			leaseCmd = cmd
			continue
		}
		assert.Equal(t, p.Index, *info.Permit, cmd)
		assert.Equal(t, p.Fence(), info.Fence, cmd)
	}
	require.NotNil(t, leaseCmd)

	release := append([]string{"release", "--force", "--redis", sharedAddr}, leaseCmd[1:]...)
	code, _, stderr := lockwatchRun(t, release...)
	require.Equal(t, exitOK, code, stderr)
	assertForceReleased(t, l.Context())
}

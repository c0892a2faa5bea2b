package main

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestElectProgramDiesWithLockwatch: a leader's lockwatch killed with
// SIGKILL takes its program along (the kernel's parent-death signal, and
// the term's watchdog).
func TestElectProgramDiesWithLockwatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	// Nothing resigns a killed leader's term: a key of its own per run.
	key := "elect-killed-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := startEnv(t, []string{"DIR=" + dir}, "elect", "--redis", sharedAddr, "--key", key, "--", "/bin/sh", "-c", script)
	pid := waitPid(t, dir, "pid", p)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	assert.Eventually(t, func() bool { return ended(pid) }, stopWait, 10*time.Millisecond, "the program outlived its lockwatch")
	assert.Contains(t, p.stderr.String(), "watchdog: lockwatch exited without ending its program")
}

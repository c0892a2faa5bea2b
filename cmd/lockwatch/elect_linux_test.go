package main

import (
	"os"
	"path/filepath"
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
	p := startEnv(t, []string{"DIR=" + dir, noExitSleep()}, "elect", "--redis", sharedAddr, "--key", key, "--", "/bin/sh", "-c", script)
	pid := waitPid(t, dir, "pid", p)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	assert.Eventually(t, func() bool { return ended(pid) }, stopWait, 10*time.Millisecond, "the program outlived its lockwatch")
	assert.Contains(t, p.stderr.String(), "watchdog: lockwatch exited without ending its program")
}

// TestElectStopBetweenTerms: a candidate whose term was lost, waiting for
// the next behind another leader, stops on SIGTSTP and goes on when
// continued, as before its first term, and on SIGTERM leaves the campaign
// with 128+15.
func TestElectStopBetweenTerms(t *testing.T) {
	t.Parallel()
	const key = "elect-stopped-between"
	dir := t.TempDir()
	conn := []string{"--redis", sharedAddr, "--key", key, "--ttl", "2s"}
	a := candidateOf(t, dir, "a", nil, conn...)
	waitEvents(t, dir, 0, a)
	b := candidateOf(t, dir, "b", nil, conn...)
	client := keyClient(t)
	queued(t, client, key, 1)

	code, _, stderr := quick(t, "release", "--redis", sharedAddr, "--force", "--key", key)
	require.Equal(t, exitOK, code, stderr)
	// The force release hands the key to b at once: b's program may start
	// before a's has ended (the fence's case), so in either order.
	events := waitEvents(t, dir, 2, a, b)
	require.ElementsMatch(t, []string{"end a", "start b"}, []string{events[1].kind + " " + events[1].name, events[2].kind + " " + events[2].name},
		"not a's loss and b's term: %v", events)
	// Queued again (after its pause): a's term is over, its program gone.
	queued(t, client, key, 1)
	pid := a.cmd.Process.Pid
	require.NoError(t, syscall.Kill(pid, syscall.SIGTSTP))
	require.Eventually(t, func() bool { return stopped(pid) }, stopWait, 5*time.Millisecond, "a candidate between terms ran on after SIGTSTP")
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	require.Eventually(t, func() bool { return !stopped(pid) }, stopWait, 5*time.Millisecond, "SIGCONT did not continue it")
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	assert.Equal(t, exitSignalBase+int(syscall.SIGTERM), a.wait(t), a.stderr.String())
	assert.Contains(t, a.stderr.String(), "campaigning again")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "exit.b"), nil, 0o644))
	assert.Equal(t, exitOK, b.wait(t), b.stderr.String())
	assert.Len(t, readLog(t, dir), 4, "a ran its program again after leaving the campaign")
}

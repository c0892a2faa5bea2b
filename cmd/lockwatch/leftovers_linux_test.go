package main

import (
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
)

// leftChild is a process a program leaves behind: it writes its pid to
// $DIR/child, a heartbeat to $DIR/beats every 20 ms, and records a SIGTERM
// in $DIR/child-term (echo is built in: no fork that a loaded machine
// delays past the grace) before it exits.
const leftChild = `sh -c 'trap "echo > \"$DIR/child-term\"; exit 0" TERM; echo $$ > "$DIR/child.tmp"; mv "$DIR/child.tmp" "$DIR/child"
  i=0; while [ $i -lt 1000 ]; do date +%s%N >> "$DIR/beats"; sleep 0.02; i=$((i+1)); done'`

// leaver is a program that starts leftChild with launcher (empty: in its
// own process group; "setsid": in a session of its own) and exits 0 once
// the child runs.
func leaver(launcher string) string {
	return launcher + " " + leftChild + ` &
while [ ! -e "$DIR/child" ]; do sleep 0.01; done
exit 0`
}

// testLeftover runs leaver(launcher) under lockwatch and checks that the
// child it leaves got SIGTERM and was gone before lockwatch released the
// key, which it has by the time it exits.
func testLeftover(t *testing.T, key, launcher, msg string) {
	dir := t.TempDir()
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", key, "--", "/bin/sh", "-c", leaver(launcher))
	child := waitPid(t, dir, "child", p)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	assert.Equal(t, exitOK, p.wait(t), p.stderr.String())
	assert.True(t, ended(child), msg)
	assert.FileExists(t, filepath.Join(dir, "child-term"), "the child got no SIGTERM")
	assert.Contains(t, p.stderr.String(), "left")
	assert.False(t, inspectJSON(t, "--redis", sharedAddr, "--key", key).Held)
}

// TestLeftoverInGroupEndedBeforeRelease: a process the program leaves in
// its process group is ended before the key is released, so that it does
// not work on while the next holder does.
func TestLeftoverInGroupEndedBeforeRelease(t *testing.T) {
	t.Parallel()
	testLeftover(t, "leftover-group", "", "the child the program left in its group ran on after lockwatch released the key")
}

// TestEscapedDescendantEndedBeforeRelease: a process the program starts
// in a session of its own (setsid, as daemons do) is out of reach of the
// group's signals, but lockwatch is its subreaper: it becomes lockwatch's
// child when the program exits, and is ended before the release too.
func TestEscapedDescendantEndedBeforeRelease(t *testing.T) {
	t.Parallel()
	testLeftover(t, "leftover-setsid", "setsid", "the child the program started with setsid ran on after lockwatch released the key")
}

// TestGroupDiesWithLockwatch: a lockwatch killed with SIGKILL can neither
// renew nor signal; the kernel kills the program (its parent-death
// signal), and the watchdog the rest of the program's group.
func TestGroupDiesWithLockwatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := leftChild + ` &
echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	// Nothing releases the key of a killed lockwatch: a key of its own
	// for each run (-count).
	key := "orphaned-group-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", key, "--", "/bin/sh", "-c", script)
	pid := waitPid(t, dir, "pid", p)
	child := waitPid(t, dir, "child", p)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	assert.Eventually(t, func() bool { return ended(pid) }, stopWait, 10*time.Millisecond, "the program outlived its lockwatch")
	assert.Eventually(t, func() bool { return ended(child) }, stopWait, 10*time.Millisecond, "the program's child outlived its lockwatch")
	assert.Contains(t, p.stderr.String(), "watchdog: lockwatch exited without ending its program")
}

// TestLossEndsEscapedDescendant: at a loss, SIGTERM reaches the program's
// descendants outside its group too, before the key can expire.
func TestLossEndsEscapedDescendant(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := keyClient(t)
	dir := t.TempDir()
	const key = "lost-setsid"
	script := "setsid " + leftChild + ` &
trap 'exit 0' TERM
echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	// TTL 6s: the grace (TTL/20, 300 ms) leaves the descendant's shell
	// time to run its TERM trap before the SIGKILL on a loaded machine
	// (at TTL 3s, 150 ms, make test once saw the SIGKILL first).
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", key, "--ttl", "6s", "--", "/bin/sh", "-c", script)
	waitPid(t, dir, "pid", p)
	child := waitPid(t, dir, "child", p)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	// Deleted under it: the next renewal is rejected.
	lockKey := leasekeys.Of(defaultNamespace, key).Lock
	require.NoError(t, client.Del(ctx, lockKey).Err())
	assert.Equal(t, exitLost, p.wait(t), p.stderr.String())
	assert.True(t, ended(child), "the descendant outside the program's group ran on after the loss")
	assert.FileExists(t, filepath.Join(dir, "child-term"), "the descendant got no SIGTERM at the loss")
}

// TestEscapedDescendantOutlivesKilledLockwatch pins the limit the manual
// states: a killed lockwatch is no longer anyone's subreaper, and the
// watchdog reaches the program's group only, so a descendant that left
// the group runs on.
func TestEscapedDescendantOutlivesKilledLockwatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Its output elsewhere: it must not hold lockwatch's stderr open.
	script := "setsid " + leftChild + ` >/dev/null 2>&1 &
echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	key := "orphaned-setsid-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", key, "--", "/bin/sh", "-c", script)
	pid := waitPid(t, dir, "pid", p)
	child := waitPid(t, dir, "child", p)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	require.Eventually(t, func() bool { return ended(pid) }, stopWait, 10*time.Millisecond, "the program outlived its lockwatch")
	assert.False(t, ended(child), "the descendant outside the group was ended: update the manual's limits")
}

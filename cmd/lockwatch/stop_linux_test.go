package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoppedLockwatchEndsProgramBeforeExpiry stops lockwatch with
// SIGSTOP, which it can neither catch nor pass on: nothing renews the key
// any more, and the program, in a process group of its own, would run on.
// The watchdog must end it before the key can expire: its heartbeats stop
// before the earliest expiry the server's PTTL allows.
func TestStoppedLockwatchEndsProgramBeforeExpiry(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := keyClient(t)
	dir := t.TempDir()
	const key = "stopped-lockwatch"
	p := beat(t, dir, false, "run", "--redis", sharedAddr, "--key", key, "--ttl", stopTTL, "--")
	pid := waitPid(t, dir, "pid", p)
	waitBeats(t, dir, 0, "the program does not beat")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	require.Eventually(t, func() bool { return stopped(p.cmd.Process.Pid) }, stopWait, 5*time.Millisecond)
	expiry := earliestExpiry(ctx, t, client, key)
	waitExpired(ctx, t, client, key, procTimeout, "the key of a stopped lockwatch did not expire")

	assert.True(t, ended(pid), "the program was still running when its key expired, its lockwatch stopped: %c", procState(pid))
	beats := readBeats(t, dir)
	require.NotEmpty(t, beats)
	last := beats[len(beats)-1]
	assert.True(t, last.Before(expiry), "the program wrote a heartbeat %v after its key could expire", last.Sub(expiry))
	t.Logf("last heartbeat %v before the earliest expiry", expiry.Sub(last))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
	assert.Equal(t, exitLost, p.wait(t), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "watchdog")
}

// logTerm checks that the program, which has ended, got SIGTERM (and
// SIGCONT) before its SIGKILL, and logs when its handler read the clock. When
// is the program's own pace: on a loaded machine the handler of a program
// continued from a stop can run late in the safety margin; the SIGKILL
// that follows ends it before the key can expire whatever the handler does
// (ended, checked at the expiry).
func logTerm(t *testing.T, dir string, expiry time.Time) {
	t.Helper()
	assert.FileExists(t, filepath.Join(dir, "term"), "the program got no SIGTERM before its SIGKILL")
	if b, err := os.ReadFile(filepath.Join(dir, "term.at")); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			t.Logf("SIGTERM handler read the clock %v before the earliest expiry", expiry.Sub(time.Unix(0, ns)))
		}
	}
}

// TestStoppedJobStopsProgram stops lockwatch's job as a shell does
// (SIGTSTP to lockwatch's process group, not the program's): the program
// stops with it, and runs again when the job is continued, still under
// its lease.
func TestStoppedJobStopsProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := beat(t, dir, true, "run", "--redis", sharedAddr, "--key", "stopped-job", "--")
	pid := waitPid(t, dir, "pid", p)
	waitBeats(t, dir, 0, "the program does not beat")
	job := p.cmd.Process.Pid

	require.NoError(t, syscall.Kill(-job, syscall.SIGTSTP))
	require.Eventually(t, func() bool { return stopped(pid) }, stopWait, 5*time.Millisecond, "the program ran on while its job was stopped")
	require.Eventually(t, func() bool { return stopped(job) }, stopWait, 5*time.Millisecond, "lockwatch did not stop")
	n := len(readBeats(t, dir))

	require.NoError(t, syscall.Kill(-job, syscall.SIGCONT))
	waitBeats(t, dir, n, "the program did not run again when its job was continued")
	assert.Equal(t, exitOK, stop(t, dir, p), p.stderr.String())
}

// TestJobStoppedPastLeaseEndsProgram keeps a job stopped longer than its
// lease: nothing renews it, so the program must be ended before the key
// can expire, and lockwatch reports the loss when it is continued.
func TestJobStoppedPastLeaseEndsProgram(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := keyClient(t)
	dir := t.TempDir()
	const key = "stopped-job-past-lease"
	p := beat(t, dir, true, "run", "--redis", sharedAddr, "--key", key, "--ttl", stopTTL, "--")
	pid := waitPid(t, dir, "pid", p)
	waitBeats(t, dir, 0, "the program does not beat")
	job := p.cmd.Process.Pid

	require.NoError(t, syscall.Kill(-job, syscall.SIGTSTP))
	require.Eventually(t, func() bool { return stopped(job) }, stopWait, 5*time.Millisecond, "lockwatch did not stop")
	expiry := earliestExpiry(ctx, t, client, key)
	waitExpired(ctx, t, client, key, procTimeout, "the key of a stopped job did not expire")

	assert.True(t, ended(pid), "the program was not ended when the key of its stopped job expired: %c", procState(pid))
	logTerm(t, dir, expiry)

	// The watchdog continued lockwatch when it ended the program; a
	// shell's fg continues it otherwise.
	_ = syscall.Kill(-job, syscall.SIGCONT)
	assert.Equal(t, exitLost, p.wait(t), p.stderr.String())
}

// TestStoppedProgramStopsLockwatch stops the program itself: lockwatch
// stops with it, as su and sudo do, so that a shell sees the job stopped;
// nothing renews the key then, so a program stopped longer than its lease
// does not hold the key for ever, and is ended before the key can expire.
func TestStoppedProgramStopsLockwatch(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := keyClient(t)
	dir := t.TempDir()
	const key = "stopped-program"
	p := beat(t, dir, false, "run", "--redis", sharedAddr, "--key", key, "--ttl", stopTTL, "--")
	pid := waitPid(t, dir, "pid", p)

	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	require.Eventually(t, func() bool { return stopped(p.cmd.Process.Pid) }, stopWait, 5*time.Millisecond,
		"lockwatch did not stop with its program: it renews the stopped program's key")
	expiry := earliestExpiry(ctx, t, client, key)
	waitExpired(ctx, t, client, key, procTimeout, "the stopped program's key did not expire")
	assert.True(t, ended(pid), "the stopped program was not ended before its key expired: %c", procState(pid))
	logTerm(t, dir, expiry)

	// The watchdog continued lockwatch when it ended the program.
	assert.Equal(t, exitLost, p.wait(t), p.stderr.String())
}

// TestProgramContinuedAloneContinuesLockwatch stops the program and then
// continues it alone (kill -STOP, kill -CONT of its pid, as an operator
// might): lockwatch, stopped with it, must follow, and the job carries on
// under its lease.
func TestProgramContinuedAloneContinuesLockwatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := beat(t, dir, false, "run", "--redis", sharedAddr, "--key", "continued-alone", "--")
	pid := waitPid(t, dir, "pid", p)
	lockwatch := p.cmd.Process.Pid

	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	require.Eventually(t, func() bool { return stopped(lockwatch) }, stopWait, 5*time.Millisecond, "lockwatch did not stop with its program")
	n := len(readBeats(t, dir))
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	require.Eventually(t, func() bool { return !stopped(lockwatch) }, stopWait, 5*time.Millisecond,
		"lockwatch stayed stopped after its program was continued")
	waitBeats(t, dir, n, "the program did not run again")
	assert.Equal(t, exitOK, stop(t, dir, p), p.stderr.String())
}

// TestTermReachesStoppedProgram ends a job whose program is stopped the
// way timeout(1) and systemd do: SIGTERM, then SIGCONT, to lockwatch. The
// program must get the SIGTERM and exit with its own status.
func TestTermReachesStoppedProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `trap 'exit 7' TERM
echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", "term-stopped", "--", "/bin/sh", "-c", script)
	pid := waitPid(t, dir, "pid", p)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	require.Eventually(t, func() bool { return stopped(pid) }, stopWait, 5*time.Millisecond)
	// lockwatch stops with its program (TestStoppedProgramStopsLockwatch
	// holds it to that); where it did not, the signals reach it running.
	waitUntil(func() bool { return stopped(p.cmd.Process.Pid) }, 2*time.Second)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
	assert.Equal(t, 7, p.waitWithin(t, stopWait, "the SIGTERM stayed pending at the stopped program"), p.stderr.String())
}

// TestTermReachesStoppedChild: a forwarded SIGTERM is followed by SIGCONT,
// so that a process of the program's group that was stopped (lockwatch
// sees only the program's own stops) runs its handler. Here the program
// waits for its stopped child when it gets SIGTERM.
func TestTermReachesStoppedChild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `sh -c 'trap "touch \"$DIR/child-term\"; exit 0" TERM; echo $$ > "$DIR/child.tmp"; mv "$DIR/child.tmp" "$DIR/child"
  i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' &
child=$!
trap 'wait $child; exit 7' TERM
while [ ! -e "$DIR/child" ]; do sleep 0.01; done
echo ready > "$DIR/ready"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	p := startEnv(t, []string{"DIR=" + dir}, "run", "--redis", sharedAddr, "--key", "term-stopped-child", "--", "/bin/sh", "-c", script)
	child := waitPid(t, dir, "child", p)
	waitFile(t, filepath.Join(dir, "ready"), p)
	require.NoError(t, syscall.Kill(child, syscall.SIGSTOP))
	require.Eventually(t, func() bool { return stopped(child) }, stopWait, 5*time.Millisecond)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 7, p.waitWithin(t, stopWait, "the stopped child never ran its SIGTERM handler"), p.stderr.String())
	_, err := os.Stat(filepath.Join(dir, "child-term"))
	assert.NoError(t, err, "the child did not get SIGTERM")
}

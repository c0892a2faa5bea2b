package main

import (
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
	"golang.org/x/sys/unix"
)

// TestInteractiveProgramReadsTerminal runs lockwatch as an interactive
// shell does, in a pseudo-terminal: a job-control shell (sh -m) puts it in
// a process group of its own, in the terminal's foreground. The program,
// in another group, can read the terminal only if lockwatch handed it the
// foreground (a background reader is stopped with SIGTTIN), and lockwatch
// exits 0 only if it could take the terminal back (without ignoring
// SIGTTOU it is stopped, and the shell reports 128+SIGTTOU).
func TestInteractiveProgramReadsTerminal(t *testing.T) {
	t.Parallel()
	script := `"$LOCKWATCH_BIN" run --redis "$REDIS" --key terminal -- /bin/sh -c 'read line; echo "got $line"'; echo "rc=$?"`
	p, ptmx := interactiveShell(t, script, nil)
	_, err := ptmx.WriteString("hello\n")
	require.NoError(t, err)
	assert.Equal(t, exitOK, p.wait(t), p.stderr.String())
	assert.Equal(t, "got hello\nrc=0\n", p.stdout.String())
}

// TestCtrlZGivesShellTheTerminal types Ctrl-Z while the program reads the
// terminal: the terminal stops the program's group (the foreground), and
// lockwatch must stop too, so that the shell sees its job stopped and
// takes the terminal back; fg then continues lockwatch, which hands the
// terminal to the program again and continues it.
func TestCtrlZGivesShellTheTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `"$LOCKWATCH_BIN" run --redis "$REDIS" --key ctrl-z -- /bin/sh -c 'echo ready > "$DIR/ready"; read line; echo "got $line"'
echo "$?" > "$DIR/stopped"
fg
echo "rc=$?"`
	p, ptmx := interactiveShell(t, script, []string{"DIR=" + dir})
	waitFile(t, filepath.Join(dir, "ready"), p)

	_, err := ptmx.Write([]byte{0x1a}) // Ctrl-Z
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "stopped")); return err == nil }, stopWait, 10*time.Millisecond,
		"the shell did not get the terminal back after Ctrl-Z: its job never stopped")
	_, err = ptmx.WriteString("hello\n")
	require.NoError(t, err)
	assert.Equal(t, exitOK, p.wait(t), p.stderr.String())
	assert.Contains(t, p.stdout.String(), "got hello\n")
	assert.True(t, strings.HasSuffix(p.stdout.String(), "rc=0\n"), "after fg: %q", p.stdout.String())
}

// interactiveShell runs script in a job-control shell (sh -m) on a new
// pseudo-terminal, as its session leader, with env added. It returns the
// shell and the terminal's master side, where the test types.
func interactiveShell(t *testing.T, script string, env []string) (*proc, *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ptmx.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pts.Close() })

	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command("/bin/sh", "-mc", script)
	p.cmd.Env = append(append(cleanEnv(), "LOCKWATCH_BIN="+bin, "REDIS="+sharedAddr), env...)
	p.cmd.WaitDelay = 5 * time.Second
	p.cmd.Stdin = pts
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p.launch(t)
	return p, ptmx
}

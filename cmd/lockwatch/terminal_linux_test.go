package main

import (
	"os"
	"os/exec"
	"strconv"
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
	script := `"$LOCKWATCH_BIN" run --redis "$REDIS" --key terminal -- /bin/sh -c 'read line; echo "got $line"'; echo "rc=$?"`
	p.cmd = exec.Command("/bin/sh", "-mc", script)
	p.cmd.Env = append(cleanEnv(), "LOCKWATCH_BIN="+bin, "REDIS="+sharedAddr)
	p.cmd.WaitDelay = 5 * time.Second
	p.cmd.Stdin = pts
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p.launch(t)

	_, err = ptmx.WriteString("hello\n")
	require.NoError(t, err)
	assert.Equal(t, exitOK, p.wait(t), p.stderr.String())
	assert.Equal(t, "got hello\nrc=0\n", p.stdout.String())
}

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// program is the command lockwatch run runs under the lease, in a process
// group of its own: a loss or a forwarded signal reaches everything it
// started (a shell script's children too), and lockwatch never signals
// itself or its parent's group. Its group id is its pid.
type program struct {
	cmd    *exec.Cmd
	pid    int
	stops  chan syscall.Signal // the signal of each stop wait sees; closed once the program has exited and been reaped
	status int                 // its exit status, read after stops is closed
	err    error               // a wait error, read after stops is closed
}

// findProgram resolves name as a shell would, before anything is taken in
// Redis, so that a typo costs no lease: 127 for a program that is not
// there, 126 for one that cannot be executed.
func findProgram(name string) (string, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, fs.ErrPermission):
		return "", fail(exitNoExec, "%s: permission denied (not an executable file)", name)
	case errors.Is(err, syscall.EISDIR):
		return "", fail(exitNoExec, "%s: is a directory", name)
	case errors.Is(err, exec.ErrDot):
		return "", fail(exitNotFound, "%s: found only relative to the current directory through $PATH; run ./%s", name, name)
	default:
		return "", fail(exitNotFound, "%s: program not found", name)
	}
}

// startProgram starts path with args (args[0] is the name as given, the
// program's argv[0]) and env, stdin, stdout and stderr inherited. The
// files are lockwatch's own descriptors, not pipes, so nothing is copied
// and an interactive program sees its terminal, in whose foreground it
// starts if lockwatch is there (terminal_linux.go).
func startProgram(path string, args, env []string) (*program, error) {
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithLockwatch(cmd.SysProcAttr)
	if ownsTerminal() {
		foreground(cmd.SysProcAttr)
	}
	if err := cmd.Start(); err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fail(exitNotFound, "%s: %v", args[0], err)
		case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
			return nil, fail(exitNoExec, "%s: %v", args[0], err)
		default:
			return nil, fail(exitInternal, "start %s: %v", args[0], err)
		}
	}
	p := &program{cmd: cmd, pid: cmd.Process.Pid, stops: make(chan syscall.Signal)}
	go p.wait()
	return p, nil
}

// wait reports the program's stops (WUNTRACED: exec.Cmd.Wait would wait
// through them, unseen) until it exits, and reaps it.
func (p *program) wait() {
	defer close(p.stops)
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(p.pid, &ws, syscall.WUNTRACED, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			p.err = err
			return
		case ws.Stopped():
			p.stops <- ws.StopSignal()
			continue
		}
		p.status = exitStatus(ws)
		// Reaped here, not by cmd.Wait: only the handle is left.
		_ = p.cmd.Process.Release()
		return
	}
}

// exitStatus is the status a shell would report: the exit code, or 128+n
// for a program killed by signal n.
func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// signal sends s to the program's process group. After the program
// exited, the group may still hold processes it left behind, which keep
// its id from being reused; once it is empty the kill fails with ESRCH,
// which is ignored.
func (p *program) signal(s syscall.Signal) { _ = syscall.Kill(-p.pid, s) }

// signalEnd sends s, a signal that asks to end, and SIGCONT after it: a
// stopped process would keep a caught signal pending until continued.
func (p *program) signalEnd(s syscall.Signal) {
	p.signal(s)
	p.signal(syscall.SIGCONT)
}

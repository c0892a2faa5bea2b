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
// itself or its parent's group.
type program struct {
	cmd        *exec.Cmd
	done       chan struct{} // closed once the program has exited and been reaped
	status     int           // its exit status, read after done
	err        error         // a Wait error other than a non-zero exit, read after done
	foreground bool          // the program's group has the terminal
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
// and an interactive program sees its terminal.
func startProgram(path string, args, env []string) (*program, error) {
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithLockwatch(cmd.SysProcAttr)
	p := &program{cmd: cmd, done: make(chan struct{}), foreground: ownsTerminal()}
	if p.foreground {
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
	if p.foreground {
		backgrounded()
	}
	go p.wait()
	return p, nil
}

func (p *program) wait() {
	defer close(p.done)
	err := p.cmd.Wait()
	if p.foreground {
		takeTerminalBack()
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		p.err = err
		return
	}
	p.status = exitStatus(p.cmd.ProcessState)
}

// exitStatus is the status a shell would report: the exit code, or 128+n
// for a program killed by signal n.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signal sends s to the program's process group. After the program
// exited, the group may still hold processes it left behind; once it is
// empty the kill fails with ESRCH, which is ignored.
func (p *program) signal(s os.Signal) {
	if n, ok := s.(syscall.Signal); ok {
		_ = syscall.Kill(-p.cmd.Process.Pid, n)
	}
}

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

// The watchdog is the supervisor of the lease's deadline that a stop of
// lockwatch cannot suspend. SIGSTOP (kill -STOP, a debugger) stops
// lockwatch without a word, and a job-control stop may reach lockwatch's
// process group and not its program's: nothing renews the key then, and
// nothing in lockwatch can end the program before the key expires. So
// lockwatch run starts a copy of itself (lockwatch __watchdog) in a
// session of its own, where no stop of lockwatch's job or terminal
// reaches it, and tells it through a pipe the program's process group and,
// every beat, the lease's cancel point. The watchdog acts only for a
// lockwatch that no longer does: past the cancel point, when the beats
// have stopped, it sends the program's group (and, on Linux, the
// descendants outside it) SIGTERM and SIGCONT, and at the cancel point
// plus --grace, which is at most the safety margin, SIGKILL: before the
// key can expire, as lockwatch itself would. A lockwatch that dies
// (SIGKILL, the OOM killer) closes the pipe without saying it is done:
// the watchdog kills the program's group at once. When lockwatch ends
// normally it says done, and the watchdog exits.
//
// A process is needed: lockwatch's own threads stop with it, and Go cannot
// fork without exec. A pause of the whole machine (a frozen VM) stops the
// watchdog too: that, as any pause, is the fence's case.

// watchdogCommand is the hidden subcommand that runs the watchdog.
const watchdogCommand = "__watchdog"

// watchdog is lockwatch's end of the pipe to its watchdog.
type watchdog struct {
	cmd    *exec.Cmd
	pipe   *os.File
	every  time.Duration // the beat
	cancel time.Duration // the latest cancel point sent, on the shared clock
	key    string
	stderr io.Writer
	deaf   bool // a write failed: warned once
	done   bool
}

// startWatchdog starts the watchdog of the lease on key, which beats every
// every and gives the program grace between SIGTERM and SIGKILL.
func startWatchdog(key string, grace, every time.Duration, stderr io.Writer) (*watchdog, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, watchdogCommand, key, grace.String(), every.String(), strconv.Itoa(os.Getpid()))
	cmd.Args[0] = os.Args[0]       // ps shows lockwatch __watchdog
	cmd.ExtraFiles = []*os.File{r} // its fd 3
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, err
	}
	return &watchdog{cmd: cmd, pipe: w, every: every, key: key, stderr: stderr}, nil
}

func (w *watchdog) pid() int { return w.cmd.Process.Pid }

// watch tells the watchdog the program's process group and the lease's
// cancel point.
func (w *watchdog) watch(pgid int, l *lease.Lease) {
	w.send("group " + strconv.Itoa(pgid))
	w.beat(l)
}

// beat tells the watchdog that lockwatch runs, and the lease's cancel
// point. The clock is read before Remaining, so the sum errs early. A
// lease no longer active keeps the last cancel point: a loss is final.
func (w *watchdog) beat(l *lease.Lease) {
	now := sharedNow()
	if left := l.Remaining(); left > 0 {
		w.cancel = max(w.cancel, now+left)
	}
	w.send("beat " + strconv.FormatInt(int64(w.cancel), 10))
}

// stopping tells the watchdog that lockwatch stops itself with its
// program: it is to continue lockwatch when the program is continued.
func (w *watchdog) stopping() { w.send("stop") }

// terminated tells the watchdog that lockwatch sent the SIGTERM of a loss
// itself.
func (w *watchdog) terminated() { w.send("term") }

// stop tells the watchdog that the program and what it left are gone,
// and waits for it to exit. It is safe to call more than once.
func (w *watchdog) stop() {
	if w.done {
		return
	}
	w.done = true
	w.send("done")
	_ = w.pipe.Close()
	_ = w.cmd.Wait()
}

// send writes one line. A watchdog that does not read it within a beat
// (stopped, or gone) is not waited for: lockwatch supervises on without
// it, and says so once.
func (w *watchdog) send(line string) {
	_ = w.pipe.SetWriteDeadline(time.Now().Add(w.every))
	if _, err := io.WriteString(w.pipe, line+"\n"); err != nil && !w.deaf {
		w.deaf = true
		fmt.Fprintf(w.stderr, "lockwatch: warning: %s: the watchdog does not listen (%v): a stop of lockwatch is no longer covered\n", w.key, err)
	}
}

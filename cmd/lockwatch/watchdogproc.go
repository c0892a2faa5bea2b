package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// watchdogPoll bounds the watchdog's sleeps: its timers run on a clock
// that stops while the machine is suspended, the cancel point is on one
// that does not (sharedNow), so after a resume it looks again within this.
const watchdogPoll = 50 * time.Millisecond

// runWatchdog is the watchdog process (watchdog.go): lockwatch run starts
// it as "lockwatch __watchdog KEY GRACE BEAT PID" (PID is lockwatch's)
// with the pipe's read end as fd 3, whose lines are "group PGID", "beat
// CANCEL-POINT", "stop", "term" and "done". It exits when the pipe
// closes.
func runWatchdog(args []string, stderr io.Writer) int {
	if len(args) != 4 {
		return exitCode(stderr, fail(exitUsage, "%s is started by lockwatch run, not by hand", watchdogCommand))
	}
	grace, err1 := time.ParseDuration(args[1])
	beat, err2 := time.ParseDuration(args[2])
	pid, err3 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return exitCode(stderr, fail(exitUsage, "%s: bad arguments %q", watchdogCommand, args[1:]))
	}
	// A supervisor that ends lockwatch's whole cgroup (systemctl stop)
	// must not end the watchdog before lockwatch has ended its program,
	// nor may a reader of stderr that went away.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGPIPE)
	d := &deadline{key: args[0], grace: grace, stale: 2 * beat, lockwatch: pid, stderr: stderr}

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(os.NewFile(3, "lockwatch"))
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timer := time.NewTimer(watchdogPoll)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				d.orphaned()
				return exitOK
			}
			d.read(line, sharedNow())
		case <-timer.C:
		}
		d.check(sharedNow())
		// Acting takes reads of /proc: the next instant counts from
		// after them.
		timer.Reset(d.next(sharedNow()))
	}
}

// deadline is what the watchdog knows of lockwatch and its lease, on the
// shared clock.
type deadline struct {
	key       string
	grace     time.Duration
	stale     time.Duration // no beat for this long: lockwatch does not run
	lockwatch int
	stderr    io.Writer

	pgid           int
	cancel, beatAt time.Duration
	termed, killed bool // SIGTERM sent (by lockwatch or the watchdog), SIGKILL sent
	ending         bool // the watchdog sent SIGTERM and SIGCONT itself
	mirrored       bool // lockwatch stopped itself with the program
	done           bool
}

func (d *deadline) read(line string, now time.Duration) {
	word, arg, _ := strings.Cut(line, " ")
	n, _ := strconv.ParseInt(arg, 10, 64)
	switch word {
	case "group":
		d.pgid = int(n)
	case "beat":
		d.cancel, d.beatAt = max(d.cancel, time.Duration(n)), now
		d.mirrored = false
	case "stop":
		d.mirrored = true
	case "term":
		d.termed = true
	case "done":
		d.done = true
	}
}

// check acts for a lockwatch that does not: SIGTERM and SIGCONT once the
// cancel point has passed and the beats have stopped, SIGKILL at the
// cancel point plus grace, whatever lockwatch did. The SIGKILL of a
// lockwatch that runs is sent twice; it is said once, by lockwatch.
func (d *deadline) check(now time.Duration) {
	if d.mirrored && d.pgid != 0 && !stillStopped(d.pgid) && (!d.ending || !d.groupRuns()) {
		// The program was continued without lockwatch, or has ended:
		// lockwatch must follow, to supervise it or to reap it. One
		// the watchdog is ending is left to end first, so that
		// lockwatch does not send it a second SIGTERM.
		d.mirrored = false
		_ = syscall.Kill(d.lockwatch, syscall.SIGCONT)
	}
	if d.pgid == 0 || d.done || d.killed || d.cancel == 0 || now < d.cancel {
		return
	}
	stale := now-d.beatAt >= d.stale
	if !d.termed && stale {
		d.termed = true
		if d.signal(syscall.SIGTERM, syscall.SIGCONT) {
			d.ending = true
			d.say("lockwatch did not act at the lease's cancel point (stopped?): sent SIGTERM to the program, SIGKILL in %v", d.grace)
		}
	}
	if now >= d.cancel+d.grace {
		d.killed = true
		if d.signal(syscall.SIGKILL) && stale {
			d.say("sent SIGKILL to the program before its key can expire")
		}
	}
}

// next is how long to sleep until the next instant check may act at.
func (d *deadline) next(now time.Duration) time.Duration {
	wait := watchdogPoll
	for _, at := range []time.Duration{d.cancel, d.beatAt + d.stale, d.cancel + d.grace} {
		if at > now {
			wait = min(wait, at-now)
		}
	}
	return wait
}

// orphaned ends the program of a lockwatch that exited without saying it
// was done: killed, it cannot renew the key any more. Its descendants
// outside the group moved to init with it and are out of reach.
func (d *deadline) orphaned() {
	if d.pgid != 0 && !d.done && syscall.Kill(-d.pgid, syscall.SIGKILL) == nil {
		d.say("lockwatch exited without ending its program: sent SIGKILL to the program's process group")
	}
}

// signal sends sigs, in order, to the program's group at once, then to
// lockwatch's descendants outside it, which take a read of /proc to find,
// and reports whether the program or any of those still ran.
func (d *deadline) signal(sigs ...syscall.Signal) bool {
	ran := alive(d.pgid)
	for _, sig := range sigs {
		_ = syscall.Kill(-d.pgid, sig)
	}
	_, outside := d.reach()
	for _, pid := range outside {
		for _, sig := range sigs {
			_ = syscall.Kill(pid, sig)
		}
	}
	return ran || len(outside) > 0
}

// groupRuns tells whether the program's group has a live process.
func (d *deadline) groupRuns() bool {
	group, _ := d.reach()
	return group
}

// reach is reach below lockwatch while lockwatch is the watchdog's parent
// (alive, or dead and not yet reaped): once it has gone its pid may name
// another process, and only the program's group is reached.
func (d *deadline) reach() (group bool, outside []int) {
	if os.Getppid() != d.lockwatch {
		return alive(d.pgid), nil
	}
	return reach(d.lockwatch, os.Getpid(), d.pgid)
}

func (d *deadline) say(format string, args ...any) {
	fmt.Fprintf(d.stderr, "lockwatch: %s: watchdog: %s\n", d.key, fmt.Sprintf(format, args...))
}

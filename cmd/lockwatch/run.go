package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// Environment variables lockwatch run adds to its program's: the fence (a
// number, for the program's own comparisons, such as an SQL column), the
// token in its wire form (what a guarded service or a fenced store checks),
// and the key.
const (
	envFence      = "LOCKWATCH_FENCE"
	envFenceToken = "LOCKWATCH_FENCE_TOKEN"
	envKey        = "LOCKWATCH_KEY"
)

// envSecrets holds the secrets that sign the lease's token (fence.ParseSecrets's
// form): an environment variable rather than a flag, so that no process list
// shows them. The program does not inherit it.
const envSecrets = "LOCKWATCH_TOKEN_SECRETS"

// defaultTTL is lease's own default: long enough that a loaded machine
// renews in time (every TTL/3), short enough that a crashed holder's key
// is free again within seconds.
const defaultTTL = 10 * time.Second

var runCmd = &command{
	name:     "run",
	synopsis: "run a program while holding a fenced lease on a key",
	usage: `
Usage: lockwatch run --key K [--permits N] [--ttl D] [--wait D] [--namespace NS] [--name N] [--replica NAME] [--grace D] [connection flags] -- PROGRAM ARGS...

Takes a fenced lease on K, runs PROGRAM with $LOCKWATCH_FENCE (the lease's
fence, decimal), $LOCKWATCH_FENCE_TOKEN (its token, for a guarded service's
Fencing-Token header) and $LOCKWATCH_KEY added to its environment, and
releases the lease when PROGRAM exits. $LOCKWATCH_TOKEN_SECRETS
(id=BASE64,..., the first active) signs the token; PROGRAM does not get it. Flags come before "--"; everything
after it is the program and its arguments. PROGRAM inherits stdin, stdout and
stderr, and runs while the lease is renewed (every TTL/3) by lockwatch.
--replica NAME names this process to the others: while it holds K, a
run on K is refused with "K is held by replica NAME" (without --replica,
"held by another"), and lockwatch inspect shows NAME.

With --permits N, lockwatch takes one of N permits of K instead of its
exclusive lease, so that at most N programs run at once under K, on any
number of hosts; every run on K should give the same N. A permit is a
lease of its own, held, renewed and lost as this text says of the lease.
$LOCKWATCH_KEY is then the permit's key, K#i, to which its token is
scoped: each permit's fences increase on their own, so a fenced store
keeps a mark per permit, under that key. $LOCKWATCH_PERMIT is i, 0 to
N-1. --wait waits for whichever permit is free first, first come, first
served. The permits of K and the exclusive lease on K are apart: a run
without --permits neither waits for nor excludes a run with them.

PROGRAM runs in a process group of its own. When stdin is a terminal whose
foreground group is lockwatch's, that group gets the terminal while PROGRAM
runs, so an interactive program can read it and Ctrl-C reaches it directly;
lockwatch takes the terminal back when PROGRAM stops or exits.

Signals sent to lockwatch (INT, TERM, HUP, QUIT, USR1, USR2, WINCH, ALRM) are
forwarded to PROGRAM's process group, INT, TERM, HUP, QUIT and ALRM followed
by CONT so that a stopped process gets them; lockwatch keeps the lease until
PROGRAM exits, then releases it and exits with PROGRAM's status. Before
PROGRAM starts, INT, TERM, HUP, QUIT or ALRM stop the wait for the key:
lockwatch exits 128+n without running it.

lockwatch and PROGRAM stop and continue as one job: when PROGRAM stops
(Ctrl-Z, STOP, TSTP), lockwatch stops too, so that a shell sees its job
stopped; TSTP or TTIN sent to lockwatch go to PROGRAM's group; when
lockwatch is continued (fg, bg, CONT) it continues PROGRAM. Nothing renews
the lease of a stopped job: a job stopped past the lease's cancel point is
ended as if the lease was lost, so a stopped PROGRAM holds its key for one
TTL at most. A PROGRAM continued on its own (kill -CONT of its pid) takes
lockwatch along (Linux).

If the lease is lost while PROGRAM runs (a renewal rejected, failed or late;
the key force-released), lockwatch sends SIGTERM and SIGCONT to PROGRAM's
process group at once, at the latest at the lease's cancel point, before
the key can expire in Redis, and SIGKILL after --grace. The grace is at most
half the lease's safety margin, TTL/20 (its default): the margin, TTL/10,
is the least time left before another holder can take the key, and its
other half is left for the SIGKILL to land on a busy host.
A longer --grace is refused (64).

A watchdog, lockwatch __watchdog in a session of its own, acts where
lockwatch cannot: when lockwatch is stopped (STOP, a debugger) at the
lease's cancel point, it sends PROGRAM's group SIGTERM and SIGCONT, and
SIGKILL after --grace; when lockwatch is killed (KILL cannot be forwarded),
it sends the group SIGKILL at once (and on Linux the kernel sends PROGRAM
SIGKILL too).

When PROGRAM exits, what it left behind is ended before the key is
released: SIGTERM and SIGCONT, SIGKILL after --grace, to its process group
and, on Linux, to its descendants outside the group (setsid, daemons), of
which lockwatch is the subreaper. Not supervised: processes that are not
PROGRAM's descendants (started through a service manager, or on another
host), processes lockwatch may not signal (another user's), and, elsewhere
than on Linux or once lockwatch is killed, descendants outside PROGRAM's
group. PROGRAM's writes must still carry $LOCKWATCH_FENCE to a
fenced store: a stopped program is not a rolled-back one, a whole machine
paused stops the watchdog too, and only the fence makes a late write
harmless.

Exit statuses:
  PROGRAM's own  PROGRAM exited with it (128+n when it was killed by signal n)
  64   usage error: bad flags, missing --key, no PROGRAM, --permits not 1 to 1024
  69   Redis unreachable, unsafe for leases (lease.Locker.Check), or it refused the acquire: nothing was taken, PROGRAM never ran
  70   any other internal failure
  75   K is held by another, or with --permits all N permits are (at once, or after --wait): PROGRAM never ran
  76   the acquire's result is unknown: PROGRAM never ran; lockwatch cleans the key up before exiting (else it expires by its TTL)
  79   the lease was lost before PROGRAM (and what it left behind) exited: PROGRAM was terminated, whatever it returned
  126  PROGRAM found but not executable
  127  PROGRAM not found
  128+n  lockwatch got signal n while waiting for the key: PROGRAM never ran

A failed release only prints a warning: the key then expires by its TTL.`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
		var conn connFlags
		conn.register(fs)
		f := &runFlags{}
		f.register(fs)
		fs.DurationVar(&f.ttl, "ttl", defaultTTL, "the lease's time to live in Redis, renewed every TTL/3")
		fs.DurationVar(&f.wait, "wait", 0, "how long to wait for a key held by another (with --permits: for a permit) before exiting 75")
		fs.IntVar(&f.permits, "permits", 0, "hold one of `N` permits of the key (1 to 1024), not its exclusive lease: at most N programs run at once")
		fs.StringVar(&f.name, "name", defaultName, "the lock `name` of the lease's metrics and logs (bounded: not the key)")
		fs.StringVar(&f.replica, "replica", "", replicaUsage)
		fs.DurationVar(&f.grace, "grace", 0, "time between SIGTERM and SIGKILL after a loss, and for what PROGRAM left behind; at most TTL/20, half the safety margin (the default)")
		return func(args []string, _, stderr io.Writer) error {
			set := given(fs)
			if err := f.check(set, args); err != nil {
				return err
			}
			return f.run(&conn, set, args, stderr)
		}
	},
}

// runFlags are run's own flags.
type runFlags struct {
	keyFlags
	holdFlags
	name    string
	replica string // lease.Config.Replica
	wait    time.Duration
	permits int // 0: the exclusive lease on the key
}

// check validates the flags and fills in the grace default. The TTL's
// bounds and the namespace's syntax are lease's to check (newLocker).
func (f *runFlags) check(set map[string]bool, args []string) error {
	switch {
	case f.key == "":
		return usageErr("run", "--key is required")
	case f.namespace == "":
		return usageErr("run", "--namespace must not be empty")
	case f.name == "":
		return usageErr("run", "--name must not be empty")
	case len(args) == 0:
		return usageErr("run", "no program to run: give it after --")
	case f.wait < 0:
		return usageErr("run", "--wait must not be negative")
	}
	if err := f.checkPermits(set); err != nil {
		return err
	}
	return f.checkHold("run", set)
}

func (f *runFlags) run(conn *connFlags, set map[string]bool, args []string, stderr io.Writer) error {
	path, err := findProgram(args[0])
	if err != nil {
		return err
	}
	// Caught from the start: a signal that arrives while the key is being
	// taken must neither kill lockwatch with the key held nor be lost.
	sigs, stopSignals := catchSignals()
	defer stopSignals()
	secrets, err := envTokenSecrets("run")
	if err != nil {
		return err
	}
	lk, closeAll, err := connectLocker(conn, set, stderr, "run", lease.Config{TTL: f.ttl, SafetyMargin: f.margin(),
		Wait: f.leaseWait(), Namespace: f.namespace, Name: f.name, Replica: f.replica, Secrets: secrets})
	if err != nil {
		return err
	}
	// Close after the release: it waits for an unknown acquire's clean-up.
	defer closeAll()
	if err := lk.Check(context.Background()); err != nil {
		return fail(exitUnavailable, "%v", err)
	}
	// The program's orphans must stay below lockwatch, and the watchdog
	// run, before anything is taken.
	adoptOrphans()
	w, err := startWatchdog(f.key, f.grace, f.beat(), stderr)
	if err != nil {
		return fail(exitInternal, "start the watchdog: %v", err)
	}
	defer w.stop()

	// The lease's context derives from ctx, so ctx is cancelled only by a
	// signal during the acquire, or once the lease is released.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, sig, err := f.acquire(ctx, cancel, lk, sigs, stderr)
	if err != nil || sig != nil {
		return f.notRun(h, sig, err)
	}

	j := &job{key: h.key(), grace: f.grace, path: path, args: args, sigs: sigs, stderr: stderr}
	s, err := j.runUnder(h.l, w, h.env())
	if err != nil {
		f.release(h, nil, stderr)
		return err
	}
	f.release(h, s.lost, stderr)
	return s.status()
}

// acquire takes the lease on the key, or one of its permits. A signal that
// asks to stop cancels it and is returned: with what was taken, if the
// acquire won the race.
func (f *runFlags) acquire(ctx context.Context, cancel context.CancelFunc, lk *lease.Locker, sigs <-chan os.Signal, stderr io.Writer) (*holding, os.Signal, error) {
	stop := endOnSignal(sigs, func(os.Signal) { cancel() })
	h, err := f.take(ctx, lk, stderr)
	return h, stop(), err
}

// notRun maps an acquire that did not lead to running the program to its
// status.
func (f *runFlags) notRun(h *holding, sig os.Signal, err error) error {
	var contended *lease.NotAcquiredError
	switch {
	case errors.Is(err, lease.ErrUnknown):
		return fail(exitUnknown, "%s: the acquire's result is unknown, the program did not run; lockwatch cleans the key up before it exits, or it expires by its TTL: %v", f.key, err)
	case sig != nil:
		if h != nil {
			_ = h.release(context.Background())
		}
		return fail(exitSignalBase+signalNumber(sig), "%s: got %v before the program started; it did not run", f.key, sig)
	case f.permits > 0 && errors.Is(err, lease.ErrNotAcquired):
		return fail(exitHeld, "%s: all %d permits are held by others: the program did not run", f.key, f.permits)
	case errors.As(err, &contended) && contended.HolderReplica != "":
		return fail(exitHeld, "%s is held by replica %s for %v more: the program did not run", f.key, contended.HolderReplica, contended.HolderTTL.Round(time.Millisecond))
	case errors.As(err, &contended):
		return fail(exitHeld, "%s is held by another for %v more: the program did not run", f.key, contended.HolderTTL.Round(time.Millisecond))
	default:
		return fail(exitUnavailable, "%s: the acquire failed, nothing was taken: %v", f.key, err)
	}
}

// release ends the lease. A lost lease is released too, in case its key is
// still there; only a release that fails for a lease still held is worth a
// warning: the key then stays held until its TTL.
func (f *runFlags) release(h *holding, lost *lease.LostError, stderr io.Writer) {
	err := h.release(context.Background())
	if err != nil && lost == nil {
		fmt.Fprintf(stderr, "lockwatch: warning: %s: release failed, the key stays held until its TTL: %v\n", h.key(), err)
	}
}

// envTokenSecrets reads the secrets of envSecrets, nil when unset; a bad
// value is a usage error of command cmd.
func envTokenSecrets(cmd string) (*fence.Secrets, error) {
	text := os.Getenv(envSecrets)
	if text == "" {
		return nil, nil
	}
	s, err := fence.ParseSecrets(text)
	if err != nil {
		return nil, usageErr(cmd, "%s: %v", envSecrets, err)
	}
	return s, nil
}

// programEnv is lockwatch's environment without the secrets: the program
// gets its token, signed, and needs no secret to send it.
func programEnv() []string {
	env := os.Environ()
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, envSecrets+"=") })
}

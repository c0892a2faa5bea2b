package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
)

var electCmd = &command{
	name:     "elect",
	synopsis: "campaign for a key and run a program while leading",
	usage: `
Usage: lockwatch elect --key K [--ttl D] [--grace D] [--identity NAME] [--replica NAME] [--name N] [--namespace NS] [connection flags] -- PROGRAM ARGS...

Campaigns for the leadership of K (package election) and runs PROGRAM while
it leads, so that of all the candidates for K one runs its PROGRAM at a
time. Each term is a fenced lease on K, renewed every TTL/3; PROGRAM gets
$LOCKWATCH_FENCE (the term's fence, decimal, larger than every earlier
term's), $LOCKWATCH_FENCE_TOKEN (its token, for a guarded service's
Fencing-Token header) and $LOCKWATCH_KEY, as under lockwatch run;
$LOCKWATCH_TOKEN_SECRETS signs the token, and PROGRAM does not get it.
Candidates wait in K's queue, first come, first served; --identity names
this one to those who ask who leads (default hostname-pid). --replica
NAME names it to the others while it leads: a lockwatch run on K is
refused with "K is held by replica NAME" (without --replica, "held by
another"), and lockwatch inspect shows NAME.

When the term is lost (a renewal rejected, failed or late; the key
force-released), PROGRAM's process group gets SIGTERM and SIGCONT at once,
at the latest at the term's cancel point, before the key can expire in
Redis, and SIGKILL after --grace. The grace is at most half the lease's
safety margin, TTL/20 (its default); a longer --grace is refused (64).
Once PROGRAM and what it left are gone, lockwatch campaigns again (after
1s) and starts PROGRAM anew, with a larger fence, when it is elected again.

When PROGRAM exits by itself while leading, lockwatch ends what it left
behind, resigns (the next candidate is elected at once, not after a TTL)
and exits with PROGRAM's status. Signals sent to lockwatch while PROGRAM
runs are forwarded to its process group as under lockwatch run; after one
that asks to end (INT, TERM, HUP, QUIT, ALRM), lockwatch resigns once
PROGRAM has exited, and exits with its status. While not leading, such a
signal ends the campaign: lockwatch leaves K's queue and exits 128+n.

What lockwatch run -h says of PROGRAM under its lease holds for each term:
its own process group, and the terminal; lockwatch and PROGRAM stop and
continue as one job; the watchdog acts when lockwatch is stopped or
killed, and the kernel kills PROGRAM when lockwatch dies; what PROGRAM
leaves behind is ended before the term is resigned. PROGRAM's writes must
still carry $LOCKWATCH_FENCE to a fenced store: only there is a deposed
leader's late write refused. Losses are logged at Warn on stderr.

Exit statuses:
  PROGRAM's own  PROGRAM exited while leading, by itself or after a forwarded signal (128+n when it was killed by signal n): lockwatch resigned
  64   usage error: bad flags, missing --key, no PROGRAM, a --grace past TTL/20
  69   Redis unreachable or unsafe for leases (lease.Locker.Check) at the start: lockwatch never campaigned
  70   any other internal failure
  79   the term was lost as PROGRAM's run ended: PROGRAM exited by itself as the loss was found, or a signal had asked lockwatch to end
  126  PROGRAM found but not executable
  127  PROGRAM not found
  128+n  lockwatch got signal n while not leading: it left the campaign

While Redis fails, a candidate tries again every second: it does not exit.`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
		var conn connFlags
		conn.register(fs)
		f := &electFlags{}
		f.register(fs)
		fs.DurationVar(&f.ttl, "ttl", defaultTTL, "each term's time to live in Redis, renewed every TTL/3")
		fs.DurationVar(&f.grace, "grace", 0, "time between SIGTERM and SIGKILL after a loss, and for what PROGRAM left behind; at most TTL/20, half the safety margin (the default)")
		fs.StringVar(&f.name, "name", "", "the election's `name` in metrics and logs, its terms' lock name (default the key)")
		fs.StringVar(&f.identity, "identity", "", "this candidate's `name`, for those who ask who leads (default hostname-pid)")
		fs.StringVar(&f.replica, "replica", "", replicaUsage)
		return func(args []string, _, stderr io.Writer) error {
			set := given(fs)
			if err := f.check(set, args); err != nil {
				return err
			}
			return f.run(&conn, set, args, stderr)
		}
	},
}

// electFlags are elect's own flags.
type electFlags struct {
	keyFlags
	holdFlags
	name, identity string
	replica        string // lease.Config.Replica
}

func (f *electFlags) check(set map[string]bool, args []string) error {
	switch {
	case f.key == "":
		return usageErr("elect", "--key is required")
	case f.namespace == "":
		return usageErr("elect", "--namespace must not be empty")
	case len(args) == 0:
		return usageErr("elect", "no program to run: give it after --")
	}
	return f.checkHold("elect", set)
}

func (f *electFlags) run(conn *connFlags, set map[string]bool, args []string, stderr io.Writer) error {
	path, err := findProgram(args[0])
	if err != nil {
		return err
	}
	// Caught from the start, as run's: a signal while campaigning ends the
	// campaign, and is never lost.
	sigs, stopSignals := catchSignals()
	defer stopSignals()
	secrets, err := envTokenSecrets("elect")
	if err != nil {
		return err
	}
	lk, _, closeAll, err := connect(conn, set, stderr, "elect", lease.Config{TTL: f.ttl, SafetyMargin: f.margin(),
		Namespace: f.namespace, Replica: f.replica, Secrets: secrets})
	if err != nil {
		return err
	}
	defer closeAll()
	if err := lk.Check(context.Background()); err != nil {
		return fail(exitUnavailable, "%v", err)
	}
	c := &candidate{job: job{key: f.key, grace: f.grace, path: path, args: args, sigs: sigs, stderr: stderr}, beat: f.beat()}
	e, err := election.New(lk, f.key, election.Config{Identity: f.identity, Name: f.name})
	if err != nil {
		return usageErr("elect", "%v", err)
	}
	adoptOrphans()
	return c.campaign(e)
}

// candidate is lockwatch elect in its election: it runs the program in each
// term it leads, and ends the campaign on a signal while none runs. Its
// program's end ends the campaign too (cancel, with lockwatch's status as
// the cause), unless lockwatch terminated it for a loss.
type candidate struct {
	job
	beat     time.Duration
	cancel   context.CancelCauseFunc
	unlisten func() os.Signal // ends the watch for signals while no program runs
	ignored  bool             // SIGTTOU is ignored: a program has run
}

// campaign runs the election until the candidate's work is over, and
// returns lockwatch's status.
func (c *candidate) campaign(e *election.Election) error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	c.cancel = cancel
	c.listen()
	err := e.Run(ctx, c.lead)
	if c.unlisten != nil {
		c.unlisten()
	}
	var status *exitError
	if errors.As(err, &status) {
		return status
	}
	return fail(exitInternal, "%s: the campaign ended: %v", c.key, err)
}

// listen ends the campaign on a signal that asks to end, while no program
// runs.
func (c *candidate) listen() {
	c.unlisten = endOnSignal(c.sigs, func(s os.Signal) {
		c.cancel(fail(exitSignalBase+signalNumber(s), "%s: got %v while not leading: left the campaign", c.key, s))
	})
}

// lead runs the program for one term, on the term's lease (its context's).
// Its return is not the campaign's result: that goes through c.cancel, so
// that it holds even if the term is found lost as lead returns.
func (c *candidate) lead(ctx context.Context, t election.Term) error {
	sig := c.unlisten()
	c.unlisten = nil
	if sig != nil {
		return nil // the campaign ended as the term began: Run resigns
	}
	l := lease.FromContext(ctx)
	switch {
	case l == nil:
		c.cancel(fail(exitInternal, "%s: term %d comes without its lease", c.key, t.Fence))
		return nil
	case ctx.Err() != nil:
		c.listen() // lost as it began: Run campaigns again
		return nil
	}
	w, err := startWatchdog(c.key, c.grace, c.beat, c.stderr)
	if err != nil {
		c.cancel(fail(exitInternal, "start the watchdog: %v", err))
		return nil
	}
	if c.ignored {
		unignoreTTOU()
	}
	c.ignored = true
	s, err := c.runUnder(l, w, leaseEnv(c.key, t.Fence, t.Token))
	switch {
	case err != nil:
		c.cancel(err)
	case s.lost != nil && s.ending && !s.endAsked:
		fmt.Fprintf(c.stderr, "lockwatch: %s: the program of term %d has ended: campaigning again\n", c.key, t.Fence)
		c.listen()
	default:
		c.cancel(orOK(s.status()))
	}
	return nil
}

// orOK is err, or status 0 for nil: a cause that ends the campaign.
func orOK(err error) error {
	if err == nil {
		return &exitError{code: exitOK}
	}
	return err
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
)

var fenceCmd = &command{
	name:     "fence",
	synopsis: "compare a resource's fence mark with the fences minted; --force mends it",
	usage: `
Usage: lockwatch fence --key K --resource R [--store-namespace NS] [--namespace NS] [--force [--to N]] [connection flags]

A fenced resource keeps, per lock key, the newest fencing token it accepted
(its mark) and refuses every token at or below it as stale. A token no lease
carried (a bad or forged one) can move the mark ahead of every fence minted
for K: the resource then refuses every holder of K until minting passes the
mark, and fences follow Redis TIME in microseconds, so a mark far ahead
bricks K there for as long.

fence reads the newest fence minted for K (the lease's fence record, in
--namespace, as inspect shows it) and the mark of K at the fence.RedisStore
--resource (keys prefixed --store-namespace) on the same Redis, and prints
both, Redis TIME, and the status: ok; ahead (the mark is above every fence
minted, but the next acquire mints above it); or bricked (the next acquire
is refused too), with the time minting passes the mark.

With --force it sets a mark that is ahead back to the newest fence minted
(fence.RedisStore.Repair: one script, only if the mark is still above it),
prints the mark before and after, and logs the repair at Warn on stderr (a
service that calls Repair also counts it in lockwatch_fence_repairs_total).
The next lease's fence is then accepted; the holder of the minted fence
itself stays refused by a strict write. When no minted fence is known (the
fence record expired or never existed) it repairs only with --to N, which
must be at least the newest fence any lease of K held, or their late writes
are accepted again: Redis TIME, printed, is above every fence minted before
it unless the record ran ahead of the clock. --to never goes below a minted
fence that is known.

A fenced SQL table is repaired in the database, with its TableConfig's
names, the minted fence (lockwatch inspect) and the row's key:

  UPDATE <table> SET <fence column> = <minted> WHERE <key column> = <key> AND <fence column> > <minted>

Exit statuses:
  0   ok: nothing to repair; or --force set the mark back
  1   ahead or bricked, and left as it is (no --force)
  64  usage error, or --force without --to when no minted fence is known
  69  Redis unreachable, or a read or the repair failed (the repair may or
      may not have taken effect: run fence again)
  70  the stored mark is not a fence (not written by lockwatch)`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
		var conn connFlags
		conn.register(fs)
		var k keyFlags
		k.register(fs)
		resource := fs.String("resource", "", "the fenced `resource` (fence.NewRedisStore's resource; required)")
		storeNS := fs.String("store-namespace", defaultStoreNamespace, "the `prefix` of the resource's Redis keys (fence.WithNamespace)")
		force := fs.Bool("force", false, "set a mark ahead of every fence minted back to the newest minted")
		to := fs.Int64("to", 0, "with --force: set the mark back to this `fence`; required when no minted fence is known")
		return func(args []string, stdout, stderr io.Writer) error {
			if err := k.checkKeyOnly("fence", args); err != nil {
				return err
			}
			set := given(fs)
			switch {
			case *resource == "":
				return usageErr("fence", "--resource is required")
			case set["to"] && !*force:
				return usageErr("fence", "--to is the fence --force sets the mark back to: give --force")
			case set["to"] && *to <= 0:
				return usageErr("fence", "--to %d is not a fence: fences are positive", *to)
			}
			client, label, err := conn.client(set)
			if err != nil {
				return usageErr("fence", "%v", err)
			}
			defer func() { _ = client.Close() }()
			logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			store, err := newStore(client, *resource, *storeNS, telemetry.New(telemetry.WithLogger(logger)))
			if err != nil {
				return usageErr("fence", "%v", err)
			}
			if err := ping(client, label); err != nil {
				return err
			}
			lk, err := newLocker(client, stderr, "fence", lease.WithNamespace(k.namespace))
			if err != nil {
				return err
			}
			defer func() { _ = lk.Close() }()
			r := repair{key: k.key, resource: *resource, storeNS: *storeNS, store: store, lk: lk, client: client}
			if set["to"] {
				r.to = *to
			}
			return r.run(context.Background(), *force, stdout)
		}
	},
}

// exitAhead is fence's status for a mark that refuses the holders (ahead
// or bricked) and was left as it is: the value release gives "nothing
// changed".
const exitAhead = 1

// defaultStoreNamespace is fence's own default (fence.WithNamespace), so
// that fence finds the marks of stores built with the defaults.
const defaultStoreNamespace = "lockwatch:fence"

// newStore builds the store, with an invalid resource or namespace as an
// error: NewRedisStore panics on one, a programming error in a service,
// which on a command line is a usage error.
func newStore(client redis.UniversalClient, resource, namespace string, tel *telemetry.Telemetry) (s *fence.RedisStore, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	return fence.NewRedisStore(client, resource, fence.WithNamespace(namespace), fence.WithTelemetry(tel)), nil
}

// repair is one lockwatch fence: what it reads, and what it repairs to.
type repair struct {
	key, resource, storeNS string
	store                  *fence.RedisStore
	lk                     *lease.Locker
	client                 redis.UniversalClient
	to                     int64 // --to; 0 when not given
}

// run reads the minted fence, the mark and Redis TIME, prints them and the
// verdict, and with force repairs a mark that is ahead.
func (r *repair) run(ctx context.Context, force bool, w io.Writer) error {
	// The mark first, then the minted fence: a lease acquired in between
	// only raises minted, so a mark seen ahead of minted was ahead of every
	// fence minted before it was read.
	mark, err := r.store.Mark(ctx, r.key)
	if err != nil {
		if strings.HasPrefix(err.Error(), "fence:") {
			return fail(exitInternal, "%v", err)
		}
		return fail(exitUnavailable, "%v", err)
	}
	info, err := r.lk.Inspect(ctx, r.key)
	if err != nil {
		return fail(exitUnavailable, "%v", err)
	}
	minted := int64(info.Fence)
	now, err := r.client.Time(ctx).Result()
	if err != nil {
		return fail(exitUnavailable, "redis TIME: %v", err)
	}
	nowMicros := now.UnixMicro()

	fmt.Fprintf(w, "key:       %s\n", r.key)
	fmt.Fprintf(w, "resource:  %s (store namespace %s)\n", r.resource, r.storeNS)
	if minted > 0 {
		fmt.Fprintf(w, "minted:    %d (the newest fence minted for the key)\n", minted)
	} else {
		fmt.Fprintln(w, "minted:    none remembered (the lease's fence record expired or never existed)")
	}
	if mark > 0 {
		fmt.Fprintf(w, "mark:      %d\n", mark)
	} else {
		fmt.Fprintln(w, "mark:      none (the resource accepted no token for the key)")
	}
	fmt.Fprintf(w, "redis now: %d (Redis TIME in microseconds: the next acquire mints at least this)\n", nowMicros)

	// The fence the next lease gets is above both minted and the clock:
	// the mark refuses it while it is above both.
	switch {
	case mark == 0:
		fmt.Fprintln(w, "status:    ok: no mark, nothing to repair")
		return nil
	case minted > 0 && mark <= minted:
		fmt.Fprintln(w, "status:    ok: the mark is not ahead of the newest fence minted, nothing to repair")
		return nil
	case minted == 0 && mark <= nowMicros:
		fmt.Fprintln(w, "status:    ok: the next acquire mints a fence above the mark (Redis TIME has passed it), nothing to repair")
		return nil
	}
	switch {
	case minted == 0:
		fmt.Fprintf(w, "status:    bricked: the mark is ahead of the fence the next acquire mints; %s\n", until(mark, minted, nowMicros))
	case mark <= nowMicros:
		fmt.Fprintf(w, "status:    ahead: the mark is ahead of every fence minted for the key; %s\n", until(mark, minted, nowMicros))
	default:
		fmt.Fprintf(w, "status:    bricked: the mark is ahead of every fence minted for the key; %s\n", until(mark, minted, nowMicros))
	}

	target := minted
	switch {
	case !force:
		fmt.Fprintln(w, "repair:    run again with --force to set the mark back to the newest fence minted")
		return &exitError{code: exitAhead}
	case r.to > 0 && minted > 0 && r.to < minted:
		return usageErr("fence", "--to %d is below the newest fence minted for %s (%d): the leases between would write again", r.to, r.key, minted)
	case r.to > 0:
		target = r.to
	case minted == 0:
		return usageErr("fence", "no fence minted for %s is remembered (its fence record expired or never existed), so nothing says where the mark belongs: "+
			"give --to N, at least the newest fence any lease of it held (Redis TIME now is %d)", r.key, nowMicros)
	}
	if mark <= target {
		fmt.Fprintf(w, "repair:    nothing to do: the mark %d is not above %d\n", mark, target)
		return nil
	}
	before, err := r.store.Repair(ctx, r.key, target)
	if err != nil {
		if strings.HasPrefix(err.Error(), "fence:") {
			return fail(exitInternal, "%v", err)
		}
		return fail(exitUnavailable, "%v (the mark may or may not have been set back: run fence again)", err)
	}
	if before <= target {
		fmt.Fprintf(w, "repair:    nothing changed: the mark is %d now, not above %d\n", before, target)
		return nil
	}
	fmt.Fprintf(w, "repaired:  mark before %d, after %d: the next lease's fence is accepted\n", before, target)
	return nil
}

// until says for how long the mark refuses every lease: until the clock,
// which fences follow, passes it (and never where minting stops).
func until(mark, minted, nowMicros int64) string {
	const lastFence = 1<<53 - 1 // fences are minted below 2^53 (lease)
	switch {
	case mark >= lastFence:
		return "every holder is refused as stale, for ever: fences are minted below 2^53, and the mark is not"
	case mark <= nowMicros:
		return fmt.Sprintf("the holders of fences up to %d are refused as stale; the next acquire mints above the mark (Redis TIME has passed it)", minted)
	}
	ahead := time.Duration(mark-nowMicros) * time.Microsecond
	at := time.UnixMicro(mark).UTC().Format(time.RFC3339)
	return fmt.Sprintf("every holder is refused as stale until minting passes it, when Redis TIME reaches it: about %s (%s from now; fences follow Redis TIME in microseconds)",
		at, humanDuration(ahead))
}

// humanDuration is d in the unit an operator reads at a glance.
func humanDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= 2*365*day:
		return fmt.Sprintf("%.1f years", d.Hours()/24/365.25)
	case d >= 2*day:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	default:
		return d.Round(time.Second).String()
	}
}

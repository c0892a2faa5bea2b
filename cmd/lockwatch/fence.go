package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

var fenceCmd = &command{
	name:     "fence",
	synopsis: "compare a resource's fence mark with the fences minted; --force mends it",
	usage: `
Usage: lockwatch fence --key K --resource R [--store-namespace NS] [--namespace NS] [--max-skew 10s] [--force [--to N]] [connection flags]

A fenced resource keeps, per lock key, the newest fencing token it accepted
(its mark) and refuses every token at or below it as stale. A token no lease
carried (a bad or forged one) can move the mark ahead of every fence minted
for K: the resource then refuses every holder of K until minting passes the
mark, and fences follow Redis TIME in microseconds, so a mark far ahead
bricks K there for as long.

fence reads the newest fence minted for K (the lease's fence record, in
--namespace, as inspect shows it) and the mark of K at the fence.RedisStore
--resource (keys prefixed --store-namespace) on the same Redis, and prints
both, Redis TIME, and the status: ok (no mark, or the next acquire mints
above it: a mark the clock has passed mends itself); or bricked (the mark
is ahead of every fence minted and of Redis TIME, so the next acquire is
refused too), with the time minting passes the mark.

With --force it sets a mark that is ahead back to the newest fence minted,
or to Redis TIME plus --max-skew if that is later (fence.RedisStore.Repair:
one script, and only if the mark is still the one read: a lease's write
accepted since is never undone, and no lease minted before the repair can
write after a newer one, the leases' clock being at most --max-skew ahead;
leases acquired within --max-skew after the repair are still refused), prints the mark before and after, and logs the repair at Warn on
stderr (a service that calls Repair also counts it in
lockwatch_fence_repairs_total). The next lease's fence is then accepted; the
holders of fences up to the new mark stay refused by a strict write. When no
minted fence is known (the fence record expired or never existed) it
repairs only with --to N, which must be at least the newest fence any lease
of K held, or their late writes are accepted again (Redis TIME bounds them
too, unless a record ran ahead of the clock). --to never goes below a
minted fence that is known. A mark that moved since it was read is left
alone (exit 1): run fence again.

A fenced SQL table is repaired in the database, with its TableConfig's
names, the mark read and the minted fence (lockwatch inspect), as
fence.RedisStore.Repair's doc shows (PostgreSQL):

  UPDATE <table> SET <fence column> = GREATEST(<minted>, <clock in µs>)
   WHERE <key column> = <key> AND <fence column> = <mark read>
     AND <fence column> > GREATEST(<minted>, <clock in µs>)

Exit statuses:
  0   ok: nothing to repair; or --force set the mark back
  1   bricked, and left as it is (no --force, or the mark moved since read)
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
		storeNS := fs.String("store-namespace", defaultStoreNamespace, "the `prefix` of the resource's Redis keys (fence.RedisConfig.Namespace)")
		force := fs.Bool("force", false, "set a bricked mark back to the newest fence minted, or Redis TIME if later")
		skew := fs.Duration("max-skew", defaultMaxSkew, "the store's MaxSkew (fence.RedisConfig.MaxSkew): the repaired mark is at least Redis TIME plus it")
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
			client, label, err := conn.client(set, stderr)
			if err != nil {
				return usageErr("fence", "%v", err)
			}
			defer func() { _ = client.Close() }()
			logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			store, err := newStore(client, *resource, *storeNS, *skew, telemetry.New(telemetry.Config{Logger: logger}))
			if err != nil {
				return usageErr("fence", "%v", err)
			}
			if err := ping(client, label); err != nil {
				return err
			}
			lk, err := newLocker(client, stderr, "fence", lease.Config{Namespace: k.namespace})
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

// exitAhead is fence's status for a bricked mark left as it is: the value
// release gives "nothing changed".
const exitAhead = 1

// defaultStoreNamespace is fence's own default
// (fence.RedisConfig.Namespace), so that fence finds the marks of stores
// built with the defaults.
const defaultStoreNamespace = "lockwatch:fence"

// newStore builds the store, with an invalid resource or namespace as an
// error: NewRedisStore panics on one, a programming error in a service,
// which on a command line is a usage error.
func newStore(client redis.UniversalClient, resource, namespace string, skew time.Duration, tel *telemetry.Telemetry) (s *fence.RedisStore, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	return fence.NewRedisStore(client, resource, fence.RedisConfig{Namespace: namespace, MaxSkew: skew, Telemetry: tel}), nil
}

// defaultMaxSkew is fence.RedisConfig.MaxSkew's default, which the store the
// command repairs most likely has.
const defaultMaxSkew = 10 * time.Second

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
	// the mark refuses it while it is above both. A mark the clock has
	// passed mends itself with the next acquire; a repair could not lower
	// it further without letting the leases below the clock write again.
	switch {
	case mark == 0:
		fmt.Fprintln(w, "status:    ok: no mark, nothing to repair")
		return nil
	case minted > 0 && mark <= minted:
		fmt.Fprintln(w, "status:    ok: the mark is not ahead of the newest fence minted, nothing to repair")
		return nil
	case mark <= nowMicros && minted > 0:
		fmt.Fprintf(w, "status:    ok: the next acquire mints above the mark (Redis TIME has passed it), nothing to repair; "+
			"the holders of fences up to %d are refused as stale, being older\n", minted)
		return nil
	case mark <= nowMicros:
		fmt.Fprintln(w, "status:    ok: the next acquire mints above the mark (Redis TIME has passed it), nothing to repair")
		return nil
	}
	fmt.Fprintf(w, "status:    bricked: the mark is ahead of every fence minted for the key and of Redis TIME; %s\n", until(mark, nowMicros))

	floor := minted
	switch {
	case !force:
		fmt.Fprintln(w, "repair:    run again with --force to set the mark back to the newest fence minted (or Redis TIME, if later)")
		return &exitError{code: exitAhead}
	case r.to > 0 && minted > 0 && r.to < minted:
		return usageErr("fence", "--to %d is below the newest fence minted for %s (%d): the leases between would write again", r.to, r.key, minted)
	case r.to > 0:
		floor = r.to
	case minted == 0:
		return usageErr("fence", "no fence minted for %s is remembered (its fence record expired or never existed), so nothing says where the mark belongs: "+
			"give --to N, at least the newest fence any lease of it held (Redis TIME now is %d)", r.key, nowMicros)
	}
	// The script sets the mark to max(floor, Redis TIME) only if it is
	// still the mark read above: a lease's write accepted in between is
	// never undone.
	after, repaired, err := r.store.Repair(ctx, r.key, mark, floor)
	switch {
	case err != nil && strings.HasPrefix(err.Error(), "fence:"):
		return fail(exitInternal, "%v", err)
	case err != nil:
		return fail(exitUnavailable, "%v (the mark may or may not have been set back: run fence again)", err)
	case !repaired && after != mark:
		fmt.Fprintf(w, "repair:    nothing changed: the mark moved from %d to %d since it was read; run fence again\n", mark, after)
		return &exitError{code: exitAhead}
	case !repaired:
		fmt.Fprintf(w, "repair:    nothing to do: the mark %d is not above %d nor Redis TIME\n", mark, floor)
		return nil
	}
	fmt.Fprintf(w, "repaired:  mark before %d, after %d: the next lease's fence is accepted\n", mark, after)
	return nil
}

// until says for how long the mark refuses every lease: until the clock,
// which fences follow, passes it (and never where minting stops).
func until(mark, nowMicros int64) string {
	const lastFence = 1<<53 - 1 // fences are minted below 2^53 (lease)
	if mark >= lastFence {
		return "every holder is refused as stale, for ever: fences are minted below 2^53, and the mark is not"
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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/lease"
)

var releaseCmd = &command{
	name:     "release",
	synopsis: "take a key or a permit back from its stuck holder (--force)",
	usage: `
Usage: lockwatch release --force (--key K | --key-hash H) [--permit I] [--holder H] [--namespace NS] [--name N] [connection flags]

A lease is released by its holder: lockwatch run releases its key when its
program exits. release --force is the administrator's last resort for a key
whose holder is stuck: it deletes the lock and bars the holder's owner
token, so the holder's next renewal is rejected (it loses the lease, reason
force_released; under lockwatch run its program is terminated), no late
copy of its acquire can take the key again, and the next acquirer gets a
larger fencing token. Until that renewal (up to a third of its TTL plus the
renewal timeout) the old holder may still be working: only the fence at the
resource stops its writes.

--key-hash H names the key by its hash, as spans, logs and the debug page
show it; --permit I takes permit I of K (lockwatch run --permits, package
permits) instead of K's lease, as lockwatch inspect --permit I shows it.

It takes the key only from one holder: the one --holder names (the hash
lockwatch inspect prints), or else the one holding the key when release
looks, just before. If another holder has the key by then (the stuck one
released and a healthy one took over), nothing changes.

A key Redis has nothing of (no lease, no fence record, no waiter: never
taken, or its last fence record expired) is most often a mistyped one:
release changes nothing, warns on stderr and exits 66, as inspect does.

It prints the holder's hash and fence it took the key from, and logs the
force release at Warn on stderr under the lock name --name. (A service that
calls lease.Locker.ForceRelease also counts it in
lockwatch_lease_force_releases_total; a one-shot command has nobody to
export a counter to.)

Exit statuses:
  0   the key was held by that holder and is now free
  1   the key was free, or held by another holder: nothing changed
  64  usage error (including a missing --force)
  66  Redis has nothing of the key: a mistyped key? Nothing changed
  69  Redis unreachable, or the outcome is unknown (the key may or may not be free)`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
		var conn connFlags
		conn.register(fs)
		var k targetFlags
		k.register(fs, false)
		name := fs.String("name", defaultName, "the lock `name` the force release is counted and logged under")
		force := fs.Bool("force", false, "required: take the key from its holder")
		holder := fs.String("holder", "", "take the key only from this `holder` (the hash lockwatch inspect prints); default: the holder at the time of the call")
		return func(args []string, stdout, stderr io.Writer) error {
			if !*force {
				return usageErr("release", "a lease is released by its holder; --force takes the key from its holder")
			}
			if err := k.check("release", args); err != nil {
				return err
			}
			if *name == "" {
				return usageErr("release", "--name must not be empty")
			}
			if *holder != "" && !holderRE.MatchString(*holder) {
				return usageErr("release", "--holder %q is not a holder hash: 12 lower-case hex digits, as lockwatch inspect prints", *holder)
			}
			lk, client, closeAll, err := connect(&conn, given(fs), stderr, "release",
				lease.Config{Namespace: k.namespace, Name: *name})
			if err != nil {
				return err
			}
			defer closeAll()
			return forceRelease(context.Background(), lk, client, &k, *holder, stdout)
		}
	},
}

// forceRelease takes k's target from holder, or from the one holding it
// when holder is "", and says what it did.
func forceRelease(ctx context.Context, lk *lease.Locker, client redis.UniversalClient, k *targetFlags, holder string, stdout io.Writer) error {
	t, name := k.targets()[0], k.label()
	if holder == "" {
		seen, err := inspectTarget(ctx, lk, t)
		if err != nil {
			return fail(exitUnavailable, "%v", err)
		}
		if !seen.Held {
			return notHeld(ctx, client, k, seen, stdout)
		}
		holder = seen.Holder
	}
	info, err := forceTarget(ctx, lk, t, holder)
	switch {
	case errors.Is(err, lease.ErrNotHeld) && info.Held:
		fmt.Fprintf(stdout, "%s is held by holder %s, not %s: nothing changed (fence %d)\n", name, info.Holder, holder, info.Fence)
		return &exitError{code: exitNotHeld}
	case errors.Is(err, lease.ErrNotHeld):
		return notHeld(ctx, client, k, info, stdout)
	case err != nil:
		return fail(exitUnavailable, "%v", err)
	}
	fmt.Fprintf(stdout, "released %s from holder %s at fence %d: the next acquirer gets a larger fence; "+
		"the holder loses the lease at its next renewal\n", name, info.Holder, info.Fence)
	return nil
}

// notHeld says that k's target was free, and fails with exitNotHeld, or
// with exitNeverSeen and a warning when Redis has nothing of it: a
// release --force of a mistyped key would otherwise look like one of a
// key its holder had just released.
func notHeld(ctx context.Context, client redis.UniversalClient, k *targetFlags, info lease.KeyInfo, stdout io.Writer) error {
	fmt.Fprintf(stdout, "%s was not held: nothing changed (fence %d)\n", k.label(), info.Fence)
	never, err := neverSeen(ctx, client, info, k.targets()[0])
	switch {
	case err != nil:
		return fail(exitUnavailable, "%s: %v", k.label(), err)
	case never:
		return fail(exitNeverSeen, "%s: Redis has nothing of it in namespace %s (no lease, no fence record, no waiter): "+
			"a mistyped key? nothing changed", k.label(), k.namespace)
	}
	return &exitError{code: exitNotHeld}
}

// holderRE is the form of lease.KeyInfo.Holder, which inspect prints.
var holderRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

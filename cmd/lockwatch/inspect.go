package main

import (
	"context"
	"flag"
	"io"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/lease"
)

var inspectCmd = &command{
	name:     "inspect",
	synopsis: "show what Redis holds for a key or its permits: holder, TTL left, fence",
	usage: `
Usage: lockwatch inspect (--key K | --key-hash H) [--permit I | --permits N] [--namespace NS] [--json] [connection flags]

Shows what Redis holds for the lease on K: whether it is held, the TTL left,
the newest fencing token minted for it, how many owner tokens are barred on
its fence record, and a short hash of the holder's owner token (the token
itself never leaves Redis), with the holder's replica when its Locker names
one (lease.Config.Replica). It only reads; it is for people, not for
deciding who may work: only the fence at the resource decides which writes
count.

--key-hash H names the key by its hash, as spans, logs and the debug page
show it (raw keys are hidden there by default): the same lease as --key.

A permit of K (lockwatch run --permits, package permits) is a lease of its
own, with names of its own in Redis: --permit I shows permit I (its key is
K#I, what the permit's program got as LOCKWATCH_KEY), and --permits N shows
permits 0 to N-1, one line each. --key K#I names another lease, which
nothing takes.

A key Redis has nothing of (no lease, no fence record, no waiter: never
taken, or its last fence record expired, 7 days after its last lease by
default) is most often a mistyped one: inspect prints what it read, warns on
stderr and exits 66.

With --json it prints one JSON object, one per line with --permits:
  {"key":..., "key_hash":..., "namespace":..., "permit":i, "held":bool, "ttl_ms":n, "fence":n, "barred":n, "holder":"...", "holder_replica":"..."}
key is "" when given by --key-hash; permit is there for a permit only;
holder_replica is "" when the key is free or its holder names no replica.
ttl_ms is 0 when the key is free and -1 when it is held without an expiry
(written by something other than lockwatch).

Exit statuses:
  0   the key was inspected (held or not), and Redis has seen it
  64  usage error
  66  Redis has nothing of the key (of none of the --permits): a mistyped key?
  69  Redis unreachable, or the read failed`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
		var conn connFlags
		conn.register(fs)
		var f targetFlags
		f.register(fs, true)
		asJSON := fs.Bool("json", false, "print one JSON object (one per line with --permits)")
		return func(args []string, stdout, stderr io.Writer) error {
			if err := f.check("inspect", args); err != nil {
				return err
			}
			lk, client, closeAll, err := connect(&conn, given(fs), stderr, "inspect", lease.Config{Namespace: f.namespace})
			if err != nil {
				return err
			}
			defer closeAll()
			return inspect(context.Background(), lk, client, &f, *asJSON, stdout)
		}
	},
}

// inspect reads f's targets and prints them; it fails with exitNeverSeen
// when Redis has seen none of them.
func inspect(ctx context.Context, lk *lease.Locker, client redis.UniversalClient, f *targetFlags, asJSON bool, stdout io.Writer) error {
	seen := false
	for i, t := range f.targets() {
		info, err := inspectTarget(ctx, lk, t)
		if err != nil {
			return fail(exitUnavailable, "%v", err)
		}
		never, err := neverSeen(ctx, client, info, t)
		if err != nil {
			return fail(exitUnavailable, "%s: %v", f.label(), err)
		}
		seen = seen || !never
		v := view{ns: f.namespace, key: f.key, info: info, permit: f.permit, listed: f.permits > 0}
		if v.listed {
			v.permit = i
		}
		if err := v.print(stdout, asJSON, i == 0); err != nil {
			return err
		}
	}
	if !seen {
		return fail(exitNeverSeen, "%s: Redis has nothing of it in namespace %s (no lease, no fence record, no waiter): "+
			"a mistyped key? (a semaphore's permits: --permits N)", f.label(), f.namespace)
	}
	return nil
}

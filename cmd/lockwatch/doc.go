// Command lockwatch runs a program while holding a fenced Redis lease, so
// that a job started on several hosts runs on one of them at a time, and
// its writes carry a fencing token that the protected store uses to reject
// a holder that came late.
//
// Install it with
//
//	go install github.com/lockwatch/lockwatch/cmd/lockwatch@latest
//
// It is a thin shell around package lease: one Locker per invocation,
// renewing the lease every TTL/3 while the program runs, cancelling it at
// its cancel point (a safety margin before the key can expire) when a
// renewal fails, and cleaning up an acquire whose reply was lost.
//
// # lockwatch run
//
//	lockwatch run --key K [--ttl 10s] [--wait 0] [--namespace lockwatch] [--name lockwatch-run] [--grace TTL/10] -- PROGRAM ARGS...
//
// takes the lease on K and runs PROGRAM with two variables added to its
// environment: LOCKWATCH_FENCE, the lease's fencing token in decimal, and
// LOCKWATCH_KEY, the key. PROGRAM inherits stdin, stdout and stderr, and
// runs in a process group of its own; when stdin is a terminal whose
// foreground group is lockwatch's, PROGRAM's group gets the terminal while
// it runs (so an interactive program can read it, and Ctrl-C reaches it),
// and lockwatch takes it back afterwards. When PROGRAM exits, lockwatch
// releases the lease and exits with PROGRAM's status.
//
// Signals sent to lockwatch (INT, TERM, HUP, QUIT, USR1, USR2, WINCH, ALRM)
// are forwarded to PROGRAM's process group; lockwatch keeps the lease until
// PROGRAM has exited. A supervisor that stops lockwatch with SIGTERM thus
// stops PROGRAM, and the key is released only once PROGRAM is gone.
//
// When the lease is lost while PROGRAM runs (a renewal rejected because the
// key was deleted, taken or force-released; a renewal that failed or did
// not answer in time), lockwatch sends SIGTERM to PROGRAM's process group
// at once, prints one line naming the loss reason, sends SIGKILL after
// --grace, and exits 79 whatever PROGRAM returned. The default grace is the
// lease's safety margin, TTL/10: the least time between the cancel point
// and the moment another holder can take the key. If lockwatch itself is
// killed (SIGKILL cannot be forwarded), the kernel sends PROGRAM SIGKILL
// (Linux): nothing renews the lease any more. That reaches PROGRAM itself,
// not the processes it started, which run on: a script should exec its
// long-running command, so that the command is PROGRAM. A stopped program
// is not a rolled-back one, so PROGRAM's writes must carry
// $LOCKWATCH_FENCE to a store that checks it: that is what makes a late
// write harmless.
//
// # lockwatch inspect
//
//	lockwatch inspect --key K [--namespace NS] [--json]
//
// shows what Redis holds for K (lease.Locker.Inspect): whether it is held,
// the TTL left, the newest fencing token, the number of barred owner
// tokens, and a short hash of the holder's owner token; never the token.
// With --json it prints one object with key, key_hash, namespace, held, ttl_ms,
// fence, barred and holder.
//
// # lockwatch release --force
//
//	lockwatch release --force --key K [--holder H] [--namespace NS] [--name N]
//
// takes K back from its holder (lease.Locker.ForceRelease): the
// administrator's last resort for a stuck holder. The holder's next renewal
// is rejected, so under lockwatch run its program is terminated, and the
// next acquirer gets a larger fence; until then the old holder may still be
// working, and only the fence stops its writes. It takes the key only from
// the holder --holder names (the hash inspect prints), or else from the one
// holding it when release looks: if another holder has the key by then,
// nothing changes. Without --force it is a usage error: a lease is released
// by its holder. The force release is logged at Warn on stderr, under the
// lock name --name (default lockwatch-run); a service that calls
// lease.Locker.ForceRelease also counts it in
// lockwatch_lease_force_releases_total, which a one-shot command has nobody
// to export to.
//
// # Connecting
//
// Every subcommand takes one of
//
//	--redis host:port | redis://[user@]host:port/db | rediss://...   (default $REDIS_URL, then 127.0.0.1:6379)
//	--sentinel host:port,host:port --master NAME                      (a Sentinel deployment)
//	--cluster host:port,...                                           (Redis Cluster seeds)
//
// and --user for an ACL user. Passwords are read from the environment only,
// never from a flag (which ps would show): LOCKWATCH_REDIS_PASSWORD, or
// REDISCLI_AUTH as redis-cli reads it, for the data nodes (a password in a
// redis:// URL wins), and LOCKWATCH_SENTINEL_PASSWORD for the sentinels.
// lockwatch PINGs first, and run also checks that the server is safe for
// leases (lease.Locker.Check: Redis 5.0 or later, maxmemory-policy
// noeviction), so a wrong address or an unsafe server is one line on
// stderr, e.g.
//
//	lockwatch: redis 127.0.0.1:6380: dial tcp 127.0.0.1:6380: connect: connection refused
//
// # Exit statuses
//
//	PROGRAM's  run: PROGRAM's own status (128+n if it was killed by signal n)
//	0          inspect, release: done
//	1          release: the key was free, or held by another holder: nothing changed
//	64         usage error: bad flags, missing --key, no PROGRAM, release without --force
//	69         Redis unreachable, unsafe, or it refused the acquire: nothing was taken, PROGRAM never ran;
//	           inspect: the read failed; release: the outcome is unknown
//	70         any other internal failure
//	75         run: the key is held by another (at once, or after --wait): PROGRAM never ran
//	76         run: the acquire's result is unknown: PROGRAM never ran; lockwatch cleans the key up before exiting (else it expires by its TTL)
//	79         run: the lease was lost before PROGRAM exited: PROGRAM was terminated
//	126        run: PROGRAM found but not executable
//	127        run: PROGRAM not found
//	128+n      run: lockwatch got signal n while waiting for the key: PROGRAM never ran
//
// 75 is EX_TEMPFAIL: for a job started on several hosts it is the normal
// outcome everywhere but one. A PROGRAM that exits 69, 75, 76 or 79 itself
// cannot be told from lockwatch by the status alone; lockwatch's own
// statuses come with a line on stderr.
//
// # A nightly job on three hosts
//
// Each of three hosts has the same crontab line:
//
//	30 2 * * * REDIS_URL=redis://redis.internal:6379/0 /usr/local/bin/lockwatch run --key nightly-report --ttl 30s -- /opt/report/run.sh
//
// One of them takes the lease and runs run.sh; the other two exit 75 at
// once (cron mails their one line; redirect stderr to a log to keep it).
// The fence is what keeps the report correct if the winner stalls (a long
// GC, a VM paused, a network partition) past its lease while another host
// takes over: run.sh writes through a fenced store, here a PostgreSQL row
// whose last_fence column is the high-water mark of the key
// nightly-report, with the check in the statement that writes, as
// fence.NewPostgresTable does it:
//
//	#!/bin/sh
//	# /opt/report/run.sh: the write carries the fence, and PostgreSQL keeps only
//	# a newer one (the check of fence.NewPostgresTable, in one statement).
//	set -e
//	body=$(/opt/report/generate)
//	written=$(psql "$REPORTS_DSN" -v ON_ERROR_STOP=1 -qAt -v fence="$LOCKWATCH_FENCE" -v body="$body" <<'SQL'
//	UPDATE reports SET body = :'body', last_fence = :fence
//	 WHERE name = 'nightly' AND last_fence < :fence
//	RETURNING last_fence;
//	SQL
//	)
//	[ -n "$written" ] || { echo "fence $LOCKWATCH_FENCE is stale: a newer run wrote first" >&2; exit 1; }
//
// The comparison is strict (last_fence < token): a token the row accepted
// once is never accepted again, as in fence.Table's Update. Tokens increase
// per key only, so the row keeps the mark of nightly-report and nothing
// else. TestCronOnThreeHosts runs this script (the README's copy, which it
// checks is this one). A Go program run under lockwatch reads the token
// with fence.Parse(os.Getenv("LOCKWATCH_FENCE")) and writes through
// fence.NewPostgresTable, fence.NewMySQLTable or fence.NewRedisStore.
//
// lockwatch runs on Linux and other Unix systems; handing the terminal to
// the program is Linux only.
package main

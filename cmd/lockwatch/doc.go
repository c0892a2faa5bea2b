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
//	lockwatch run --key K [--ttl 10s] [--wait 0] [--namespace lockwatch] [--name lockwatch-run] [--replica NAME] [--grace TTL/20] -- PROGRAM ARGS...
//
// takes the lease on K and runs PROGRAM with three variables added to its
// environment: LOCKWATCH_FENCE, the lease's fence in decimal (for the
// program's own comparisons, such as an SQL column); LOCKWATCH_FENCE_TOKEN,
// the lease's token in its wire form (what a guarded service's
// Fencing-Token header or a fenced store takes: it names the key, so a
// resource keyed otherwise refuses it); and LOCKWATCH_KEY, the key. With
// LOCKWATCH_TOKEN_SECRETS set (fence.ParseSecrets's form: id=BASE64,...,
// the first active), the token is signed; the program does not inherit
// the secrets. PROGRAM inherits stdin, stdout and stderr, and
// runs in a process group of its own; when stdin is a terminal whose
// foreground group is lockwatch's, PROGRAM's group gets the terminal while
// it runs (so an interactive program can read it, and Ctrl-C reaches it),
// and lockwatch takes it back when PROGRAM stops or exits. When PROGRAM
// exits, lockwatch ends what it left behind, releases the lease and exits
// with PROGRAM's status.
//
// --replica NAME is lease.Config.Replica: while this run holds K, another
// run on K is refused with "K is held by replica NAME" rather than "held
// by another", and lockwatch inspect shows NAME. It is at most 64 bytes
// of [A-Za-z0-9._:-] (else a usage error, 64); without it the holder is
// unnamed, so that nothing (a hostname, say) is shown unless chosen.
//
// Signals sent to lockwatch (INT, TERM, HUP, QUIT, USR1, USR2, WINCH, ALRM)
// are forwarded to PROGRAM's process group, those that ask to end (INT,
// TERM, HUP, QUIT, ALRM) followed by CONT, so that a stopped process of the
// group gets them; lockwatch keeps the lease until PROGRAM has exited. A
// supervisor that stops lockwatch with SIGTERM (and SIGCONT, as systemd and
// timeout do) thus stops PROGRAM, stopped or not, and the key is released
// only once PROGRAM is gone.
//
// When the lease is lost while PROGRAM runs (a renewal rejected because the
// key was deleted, taken or force-released; a renewal that failed or did
// not answer in time), lockwatch sends SIGTERM and SIGCONT to PROGRAM's
// process group at once, prints one line naming the loss reason, sends
// SIGKILL after --grace, and exits 79 whatever PROGRAM returned. The grace
// is at most half the lease's safety margin, TTL/20, which is its default:
// the margin, TTL/10, is the least time between the cancel point and the
// moment another holder can take the key, and its other half is room for
// the SIGKILL to be delivered late on a busy host. A longer --grace is a
// usage error (64), because its SIGKILL could come after the key could
// expire. A stopped program is not a
// rolled-back one, so PROGRAM's writes must carry $LOCKWATCH_FENCE to a
// store that checks it: that is what makes a late write harmless.
//
// # What lockwatch run supervises
//
// lockwatch and PROGRAM are one job for whoever stops it, though they run
// in two process groups, and lockwatch mirrors stops as su and sudo do.
// When PROGRAM stops (Ctrl-Z on the terminal it holds, STOP or TSTP sent to
// it, a read of the terminal from the background), lockwatch takes the
// terminal back and stops itself with SIGSTOP, so that a shell sees the
// job stopped and gets its terminal; SIGSTOP, because once Go has caught
// TSTP it cannot make that signal stop lockwatch again. A TSTP or TTIN sent
// to lockwatch (a shell's stop of a job started with &) goes to PROGRAM's
// group. When lockwatch is continued (fg, bg, CONT) it continues PROGRAM,
// and hands it the terminal if lockwatch's job is in the foreground.
//
// While the job is stopped nothing renews its lease: a job continued
// before the lease's cancel point carries on under it, one stopped longer
// is ended before the key can expire, and lockwatch reports the loss and
// exits 79. A stopped PROGRAM thus holds its key for one TTL at most, and
// never runs past it. On Linux a PROGRAM that runs again without lockwatch
// (kill -CONT of its pid, or ended by the watchdog) takes lockwatch along:
// the watchdog continues a lockwatch that stopped with its program, so
// that it supervises or reaps it. A lockwatch stopped by SIGSTOP of its
// own waits for its SIGCONT.
//
// What lockwatch cannot do while it is stopped (SIGSTOP, which it cannot
// catch nor pass on; a debugger) or after it was killed, its watchdog
// does: lockwatch __watchdog, a copy of lockwatch that lockwatch starts in
// a session of its own, so that no stop of lockwatch's job or terminal
// reaches it. lockwatch beats it through a pipe with the lease's cancel
// point (a fourth of the safety margin apart). If the beats have stopped
// when the cancel point comes, the watchdog sends PROGRAM's group SIGTERM
// and SIGCONT, and at the cancel point plus --grace SIGKILL, whatever
// lockwatch did: the same deadlines as for a loss. If lockwatch dies (the
// pipe closes without a word), it sends the group SIGKILL at once; on Linux
// the kernel kills PROGRAM then too (its parent-death signal). Each time
// the watchdog acts in lockwatch's stead it prints a line. It is a process
// because lockwatch's threads stop with lockwatch; it acts at the cancel
// point, not at the stop, because until then the key is still PROGRAM's:
// a short stop of lockwatch (a debugger's breakpoint) costs PROGRAM
// nothing.
//
// When PROGRAM exits, what it left behind would work on after the release,
// beside the next holder's program. So lockwatch ends what it can reach
// before it releases the key: SIGTERM and SIGCONT, SIGKILL after --grace
// (after a loss, at the loss's SIGKILL), and it prints a line saying what
// it found. What it reaches:
//
//   - PROGRAM's process group: everything PROGRAM started that did not
//     leave it (a shell script's background jobs);
//   - on Linux, every other descendant of PROGRAM: lockwatch is the
//     subreaper of its descendants (PR_SET_CHILD_SUBREAPER), so a process
//     that left the group (setsid, a daemon's double fork) stays below
//     lockwatch when its parent exits, instead of moving to init, and
//     lockwatch finds it in /proc. It gets the signals of a loss and of the
//     end; those forwarded to PROGRAM, and the stops, reach the group only.
//
// What it does not reach: processes that are not PROGRAM's descendants
// (started through a service manager, or on another host), processes
// lockwatch may not signal (another user's), and, elsewhere than on Linux
// or once lockwatch was killed (it is nobody's subreaper then, and the
// watchdog ends the group), descendants outside PROGRAM's group. A script
// should keep its work in its process group, and exec its last command.
// A pause of the whole machine (a frozen VM) stops the watchdog with
// lockwatch: that, as every pause, is the fence's case.
//
// # lockwatch run --permits
//
//	lockwatch run --key K --permits N [--wait 0] [other run flags] -- PROGRAM ARGS...
//
// takes one of the N permits of K (package permits) instead of K's
// exclusive lease, so that at most N PROGRAMs run at once under K, on any
// number of hosts: the four exports, the two calls into a partner's rate
// limit. N is 1 to 1024 (permits.MaxLimit), and every run on K should give
// the same N (the permits package doc says what happens while they
// differ). A permit is a lease, so lockwatch holds it as it holds the
// lease: renewed, its loss ending PROGRAM before its key can expire,
// supervised and watched the same way. Without a permit free, lockwatch
// exits 75 at once, or after --wait, which waits for whichever permit is
// released first, first come, first served, without running PROGRAM.
//
// PROGRAM gets the permit's LOCKWATCH_FENCE and LOCKWATCH_FENCE_TOKEN, and
// LOCKWATCH_KEY is the permit's key, K#i (permits.Key), not K: each permit
// is a fencing domain of its own, whose fences increase per permit and
// whose token is scoped to K#i, so a fenced store that the N PROGRAMs
// write keeps a mark per permit under LOCKWATCH_KEY, and a late holder of
// permit i is refused once the next holder of permit i wrote.
// LOCKWATCH_PERMIT is i, 0 to N-1, for what PROGRAM keeps per permit. The
// permits of K and the exclusive lease on K are apart: a run without
// --permits neither waits for nor excludes a run with them. lockwatch
// inspect --key K --permits N shows the N permits, and --permit i selects
// one for inspect and release --force; --key K#i names another lease.
//
// # lockwatch elect
//
//	lockwatch elect --key K [--ttl 10s] [--grace TTL/20] [--identity hostname-pid] [--replica NAME] [--name K] [--namespace lockwatch] -- PROGRAM ARGS...
//
// campaigns for the leadership of K (package election) and runs PROGRAM
// in each term it leads, so that of all the candidates for K, on any
// number of hosts, one runs its PROGRAM at a time: the singleton that
// runs a scheduler or an outbox relay. A term is a fenced lease on K, and
// PROGRAM gets the term's LOCKWATCH_FENCE, LOCKWATCH_FENCE_TOKEN and
// LOCKWATCH_KEY as under lockwatch run: the fence is larger than every
// earlier term's, whoever led it. Candidates wait in K's queue, first
// come, first served; --identity names the candidate to package
// election's Observe, --replica (as under run) to the refusals of others
// while it leads, --name the election in metrics and logs.
//
// When a term is lost, PROGRAM's process group gets SIGTERM and SIGCONT at
// once and SIGKILL after --grace, before the key can expire, as under run
// and with the same bound on --grace; once PROGRAM and what it left are
// gone, lockwatch says so in a line, campaigns again after a second, and
// starts PROGRAM anew when it is elected again. While Redis fails, a
// candidate tries again every second; it does not exit. When PROGRAM
// exits by itself while leading, lockwatch resigns (the next candidate is
// elected at once, not after a TTL) and exits with its status. A signal
// that asks to end (INT, TERM, HUP, QUIT, ALRM) is forwarded to PROGRAM's
// group while it runs: lockwatch resigns once PROGRAM has exited, and
// exits with its status. While no PROGRAM runs, such a signal ends the
// campaign: lockwatch leaves K's queue and exits 128+n. What lockwatch
// run supervises (above) lockwatch elect supervises in each term, the
// term being the lease: stops, the watchdog, the parent-death signal, and
// what PROGRAM leaves behind, which is ended before the term is resigned.
//
// # lockwatch inspect
//
//	lockwatch inspect (--key K | --key-hash H) [--permit I | --permits N] [--namespace NS] [--json]
//
// shows what Redis holds for K (lease.Locker.Inspect): whether it is held,
// the TTL left, the newest fencing token, the number of barred owner
// tokens, and a short hash of the holder's owner token, never the token,
// with the holder's replica when its Locker names one
// (lease.Config.Replica). With --json it prints one object with key,
// key_hash, namespace, held, ttl_ms, fence, barred, holder and
// holder_replica (and permit, for a permit). --key-hash names K by the
// hash spans, logs and the debug page show. --permit I shows K's permit
// I, --permits N permits 0 to N-1, a line (a JSON object) each. A key
// Redis has nothing of (no lease, no fence record, no waiter), most often
// a mistyped one, is a warning on stderr and exit 66.
//
// # lockwatch release --force
//
//	lockwatch release --force (--key K | --key-hash H) [--permit I] [--holder H] [--namespace NS] [--name N]
//
// takes K, or its permit I, back from its holder
// (lease.Locker.ForceRelease): the administrator's last resort for a stuck
// holder. The holder's next renewal is rejected, so under lockwatch run its
// program is terminated, and the next acquirer gets a larger fence; until
// then the old holder may still be working, and only the fence stops its
// writes. It takes the key only from the holder --holder names (the hash
// inspect prints), or else from the one holding it when release looks: if
// another holder has the key by then, nothing changes. A key Redis has
// nothing of, most often a mistyped one, changes nothing either, and is a
// warning on stderr and exit 66, as with inspect. Without --force it
// is a usage error: a lease is released by its holder. The force release is
// logged at Warn on stderr, under the lock name --name (default
// lockwatch-run); a service that calls lease.Locker.ForceRelease also
// counts it in lockwatch_lease_force_releases_total, which a one-shot
// command has nobody to export to.
//
// # lockwatch fence
//
//	lockwatch fence --key K --resource R [--store-namespace NS] [--namespace NS] [--max-skew 10s] [--force [--to N]]
//
// compares the high-water mark of K at the fence.RedisStore R (on the same
// Redis; store namespace default lockwatch:fence) with the newest fence
// minted for K (the lease's fence record, as inspect reads it), and prints
// both, Redis TIME and the status: ok (no mark, or one the next acquire
// mints above: a mark Redis TIME has passed mends itself); or bricked (the
// mark is ahead of every fence minted and of Redis TIME, so the next
// acquire's fence is refused too, until Redis TIME, which fences follow in
// microseconds, passes it; never for a mark at or above 2^53-1), with the
// date that happens. A token no lease carried is what moves a mark there.
// Without --force it changes nothing and exits 1 when the mark is bricked.
// With --force it sets the mark back to the newest fence minted or Redis
// TIME plus the store's skew (--max-skew, fence.RedisConfig.MaxSkew's 10 s
// by default), whichever is later (fence.RedisStore.Repair, one script, only
// if the mark is still the one read, so that no accepted write is undone and
// no lease minted before the repair writes after a newer one;
// model/lease.pml checks it), prints the mark before and after, and logs the
// repair at Warn on stderr. When no minted fence is remembered (the record
// expired or never existed) it repairs only with an explicit --to N, at
// least the newest fence any lease of K held; --to is never below a minted
// fence that is known. A fenced SQL table is repaired in the database with
// the statement Repair's doc gives.
//
// # lockwatch version
//
// prints the module version go install stamped (or (devel) and the commit
// of a build from a work tree) and the Go release; --version is the same.
//
// # Connecting
//
// Every subcommand takes one of
//
//	--redis host:port | redis://[user@]host:port/db | rediss://...   (default $REDIS_URL, then 127.0.0.1:6379)
//	--sentinel host:port,host:port --master NAME                      (a Sentinel deployment)
//	--cluster host:port,...                                           (Redis Cluster seeds)
//
// and --user for an ACL user. A command given none of --redis, $REDIS_URL,
// --sentinel and --cluster says on stderr that it uses 127.0.0.1:6379.
// Passwords are read from the environment only, never from a flag (which ps
// would show): LOCKWATCH_REDIS_PASSWORD, or REDISCLI_AUTH as redis-cli
// reads it, for the data nodes (a password in a redis:// URL wins), and
// LOCKWATCH_SENTINEL_PASSWORD for the sentinels. lockwatch PINGs first, and
// run also checks that the server is safe for leases (lease.Locker.Check:
// Redis 5.0 or later, maxmemory-policy noeviction), so a wrong address or
// an unsafe server is one line on stderr, e.g.
//
//	lockwatch: redis 127.0.0.1:6380: dial tcp 127.0.0.1:6380: connect: connection refused
//
// # Exit statuses
//
//	PROGRAM's  run: PROGRAM's own status (128+n if it was killed by signal n);
//	           elect: the status of the PROGRAM that exited while leading (by itself or after a forwarded signal)
//	0          inspect, release: done; fence: nothing to repair, or --force set the mark back; version
//	1          release: the key was free, or held by another holder: nothing changed;
//	           fence: the mark is bricked, and was left as it is (no --force, or it moved since read)
//	64         usage error: bad flags, missing --key, no PROGRAM, --permits not 1 to 1024, release without --force,
//	           fence --force without --to when no minted fence is remembered
//	66         inspect, release: Redis has nothing of the key (no lease, no fence record, no waiter): a mistyped key?
//	69         Redis unreachable, unsafe, or it refused the acquire: nothing was taken, PROGRAM never ran;
//	           inspect, fence: a read failed; release, fence --force: the outcome is unknown;
//	           elect: Redis unreachable or unsafe at the start: it never campaigned
//	70         any other internal failure; fence: the stored mark is not a fence
//	75         run: the key is held by another, or with --permits all N permits are (at once, or after --wait): PROGRAM never ran
//	76         run: the acquire's result is unknown: PROGRAM never ran; lockwatch cleans the key up before exiting (else it expires by its TTL)
//	79         run: the lease was lost before PROGRAM (and what it left behind) exited: PROGRAM was terminated;
//	           elect: the term was lost as PROGRAM's run ended (it exited by itself as the loss was found, or a signal had asked lockwatch to end)
//	126        run, elect: PROGRAM found but not executable
//	127        run, elect: PROGRAM not found
//	128+n      run: lockwatch got signal n while waiting for the key: PROGRAM never ran;
//	           elect: lockwatch got signal n while not leading: it left the campaign
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
// with fence.Parse(os.Getenv("LOCKWATCH_FENCE_TOKEN")) and writes through
// fence.NewPostgresTable, fence.NewMySQLTable or fence.NewRedisStore, which
// check that it was minted for their key.
//
// lockwatch runs on Linux and other Unix systems; handing the terminal to
// the program, and reaching descendants outside its process group, are
// Linux only.
package main

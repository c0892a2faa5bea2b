// Package election elects one leader among the replicas of a service, on
// fenced leases (package lease): the singleton that runs the scheduler, the
// reconciler or the outbox relay, which must stay one even when a leader
// pauses, Redis stalls or a term is taken away.
//
// A term is a lease on the election's key, and its fence is the term's
// number: strictly increasing across terms, restarts and failovers, and the
// fencing token the leader gives the resource it writes, which refuses a
// deposed leader's writes. Election timing alone cannot give that: a leader
// can always pause past its term.
//
//	e, err := election.New(locker, "scheduler", election.Config{})
//	err = e.Run(ctx, func(ctx context.Context, t election.Term) error {
//		return schedule(ctx, t.Token) // until ctx ends: the term's end
//	})
//
// Run campaigns by a waiting Acquire that only ctx ends: candidates queue
// first come, first served, and the script that frees the key grants it to
// the oldest waiter and publishes the grant, so a resigning leader's
// successor starts at once, not after a TTL.
//
// The leader's function runs on the term's lease context, which is
// cancelled, with a *lease.LostError cause, before the key can expire while
// the process runs. A process stopped past that point (a pause, a frozen
// VM) runs again with its context cancelled a moment later, not at once: a
// step that must not run late checks the term's lease
// (lease.FromContext(ctx).Err() answers from the clock) or writes through
// Lease.Commit, and the fence refuses what still gets through. The function
// is awaited before the term is resigned (Release: the key is handed on and
// the term's token barred), so the next term starts only once it returned,
// unless the key expired or was taken by force (Locker.ForceRelease) first.
// A function is a late completion (ErrLateCompletion) when it may have
// overlapped the next term: its release finds the key gone (expired, or
// taken by force and not yet noticed), or cannot reach Redis after the
// function returned past the instant its lost term's key may have expired
// (lease.LostError.KeyHeldUntil). A release that deletes the key proves
// nobody led meanwhile, and a function that stopped within the safety
// margin after its loss cannot have overlapped a successor, even when a
// stalled Redis leaves its release unanswered. The fence is what makes a
// late write harmless.
//
// A lost term does not end Run: the candidate campaigns again in-process
// after Config.Pause; it never needs to exit to be safe. A function that
// returns by itself ends Run with its error (the program's work is over,
// and the term is resigned so that the next candidate starts at once); a
// function that should lead again loops inside. A panic in it resigns the
// term and goes on. Config.OnStartedLeading is called before each term's
// function, and Config.OnStoppedLeading once for each term that started,
// after it was resigned, with the reason; both on Run's goroutine, so they
// never overlap or swap.
//
// Observe says who leads: the term holding the key (Locker.Inspect) and its
// leader's identity, or ErrNoLeader. The lease keeps no names, so a leader
// writes "<fence> <until> <identity>" to <namespace>:{<hash>}:n, in the
// lease's hash slot (Redis Cluster) and under the Locker's ACL key pattern,
// with GET, SET and TIME in a script (SECURITY.md); Observe names a leader
// only when the record is the held term's.
//
// # Signals
//
// Config.Telemetry receives the lockwatch_election_* series (package
// telemetry lists them), labelled with Config.Name: a leader gauge per
// candidate, term changes, the newest term, terms' lengths, the time
// without a leader, losses by reason and late completions; one
// election.term span per term, which fn's context carries; and a Warn log
// on a loss and on a late completion. The terms' leases record there too,
// under the election's name as their lock name, so the renewal latency and
// failures that eat a term's TTL are the election's.
//
// The time without a leader is measured by each new leader on the Redis
// clock, from the previous term's until in the record: the time the term is
// known valid to, which its leader rewrites every third of the term's
// validity and sets to the term's end when it ends. A leader that vanished
// without ending its term is measured from its last rewrite, which the
// lease's later renewals may have outlived by up to a third of its TTL.
//
// Election.Ready is an http.HandlerFunc for a readiness probe: 200 while
// the candidate leads, 503 otherwise, so that a Service sends traffic to
// the leader only.
package election

// Package failover measures how long an election goes without a leader
// after its leader fails: lockwatch's election.Run beside etcd's
// concurrency.Election on an embedded etcd server, in one run on one
// machine, so that the figures that matter are the two side by side.
//
// BenchmarkFailover starts a private redis-server and an etcd server
// (go.etcd.io/etcd/server/v3's embed, in a child process) on 127.0.0.1, and
// three candidates of each election, each a process of its own (the test
// binary run again in a candidate's role), so that a leader can really be
// killed or stopped. Both elections use a 2 s term: lockwatch's lease TTL
// and etcd's session TTL (etcd counts TTLs in whole seconds). Three faults,
// interleaved between the two elections, each 20 times:
//
//   - kill: the leader gets SIGKILL. Nobody resigns; the next leader waits
//     for the term's key to expire (the lease's TTL, the session's).
//   - resign: the leader resigns: its function returns (lockwatch: the
//     release hands the key to the oldest waiter over Pub/Sub) or it calls
//     Election.Resign (etcd: the next waiter's watch sees the key go).
//   - pause: the leader gets SIGSTOP and SIGCONT once the next leader
//     started: how long the election was without a leader, and what the
//     deposed leader does and learns once it runs again.
//
// The time without a leader runs from the fault (the signal sent, or the
// resign command written to the leader's standard input) to the parent's
// receipt of the next leader's "lead" line on its standard output: both
// instants on the parent's monotonic clock.
//
// The module is not in the repository's go.work: etcd's server brings a
// dependency tree whose versions would change what the workspace selects
// for the other modules. Run it with GOWORK=off (make bench-failover).
package failover

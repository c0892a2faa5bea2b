// Package redistest runs private redis-server processes for integration tests.
//
// The lease package makes claims about what happens when Redis crashes,
// restarts empty, stalls, fails over to a replica that missed writes, or is
// sharded across a cluster. Those claims can only be checked against a real
// server whose process the test controls, so every test gets its own
// redis-server rather than sharing one started by hand: a test that kills,
// pauses or promotes its server cannot disturb any other test, and tests can
// run in parallel across packages.
//
// Every server listens on 127.0.0.1 only, on a port picked at start. Picking
// a free port is inherently racy (another process may take it between the
// probe and redis-server binding it), so Start retries with a new port when
// redis-server reports the address in use, and readiness is confirmed by
// matching the process id reported by INFO, never by a bare PING that some
// other server on a recycled port could answer.
//
// Servers run without persistence (no RDB snapshots, no AOF), so Kill followed
// by Restart is a crash that loses every key: the situation fencing tokens
// exist for. Each server writes its log, including anything redis-server
// prints before its logfile is open, to redis.log in its own t.TempDir(); the
// tail of that log is part of every start failure so CI failures are
// diagnosable without the machine.
//
// Replication helpers return only once the state they set up is real, not
// merely requested: ReplicaOf waits until the primary has an acknowledgement
// from the replica, so WAIT works from the first write, and StopReplication
// leaves a read-only replica holding stale data, the partitioned replica a
// failover can promote.
//
// All processes are killed and reaped by t.Cleanup, including ones left
// paused with SIGSTOP, so a failing test leaves neither orphans nor zombies.
//
// Require decides whether integration tests may run at all: without
// redis-server on PATH they are skipped locally, but with
// LOCKWATCH_REQUIRE_INTEGRATION=1 (as in CI) they fail, so a broken CI image
// can never turn the integration suite into a silent no-op.
package redistest

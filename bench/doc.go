// Package bench measures what a lockwatch lease costs, against the floor of
// a bare Redis lock and against other Go lock libraries, in one run on one
// machine.
//
// It is a module of its own so that the libraries it compares with never
// enter lockwatch's dependencies. Every figure that matters is a ratio to a
// baseline measured in the same run (a raw SET NX PX plus a Lua
// compare-and-delete, a PING round trip, a plain HTTP handler), because
// absolute numbers on a shared 2-core machine move from run to run while
// ratios mostly do not.
//
// The benchmarks, all against private redis-server processes on 127.0.0.1:
//
//   - BenchmarkCycle: one acquire + release of the raw floor, the fenced
//     floor (lockwatch's acquire and release scripts through go-redis
//     alone), lockwatch with telemetry off (with Release and with
//     ReleaseAsync) and on, bsm/redislock, go-redsync and rueidislock, from
//     one goroutine and from 16, on distinct keys and on one contended key,
//     with the Redis round trips and the client's and the server's CPU time
//     per cycle; and single/interleaved, every implementation once per
//     iteration, so that a slow phase of the machine weighs on all of them
//     alike.
//   - BenchmarkClients: the 16-goroutine cycle of the raw floor, lockwatch
//     and redislock in each go-redis configuration a user may pick (default
//     pool or 64 connections, ContextTimeoutEnabled on or off), on a fresh
//     key per op and on a key reused by every op.
//   - BenchmarkHTTP: a loopback net/http server, plain, with a PING in the
//     handler, with the raw floor's lock around the handler, and wrapped in
//     middleware.HTTP (background and synchronous release), with 1 and 16
//     keep-alive clients, beside a PING from the benchmark loop.
//   - BenchmarkScale: one Locker holding 1k, 10k and 100k leases: heap
//     per lease and CPU per second spent renewing them.
//   - BenchmarkLossDetection: redis-server stopped with SIGSTOP under held
//     leases: how long each lease's context takes to be cancelled.
//   - BenchmarkWakeup: how soon a waiter holds a key after its holder starts
//     to release it (lockwatch on a single node and on Cluster,
//     rueidislock, and redislock and go-redsync polling), beside a PING of
//     the same seconds; and one hot key with 16 and 256 waiters, in one
//     process and in one each, lockwatch beside rueidislock and redislock:
//     hand-offs per second, Redis commands per acquisition, wake-up latency
//     beside a PING of the same seconds, the acquisitions by others during
//     each acquire against waiters−1, and the most times any one other
//     waiter was served again during one wait (first come, first served:
//     at most once).
//   - BenchmarkPermitsCycle and BenchmarkPermits: lockwatch's permits
//     beside Go re-implementations of Redisson's RSemaphore (a counter,
//     woken by Pub/Sub) and of the Node library redis-semaphore (a sorted
//     set, polling): the acquire + release cycle with a permit free, the
//     hand-off to one waiter with every permit held, and 16 and 256
//     waiters on 4 permits, with the wake-up benchmark's measures.
//
// cmd/benchmd runs them and writes BENCHMARKS.md at the repository root
// (make bench), with the leader failover of bench/failover beside etcd's
// election: a module of its own, outside go.work (make bench-failover).
package bench

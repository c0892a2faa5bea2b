// Package fence is the resource side of lockwatch: the fencing token, its
// text form (Parse, Token.String), and stores that check a write's token and
// make the write in one atomic step.
//
// A lease alone cannot stop a holder that paused past its TTL from writing
// after another holder took over. The fence can: every lease carries a token
// that strictly increases per lock key, every write carries the token of the
// lease it was made under, and the resource rejects a token older than the
// newest it accepted. The check and the write must be one atomic step (a Lua
// script, one SQL statement): a check here and a write there leaves the
// window the fence exists to close.
//
// Tokens are per lock key. A resource compares the tokens of one key only:
// keep one high-water mark per lock key (or per item a lock key protects),
// never one for a whole table guarded by many keys.
//
// # Writing under a lease
//
// A holder writes inside lease.Lease.Commit, with the context and token Commit
// passes to its function, and hands the token to the store's write, which
// checks it in the same statement or script:
//
//	err := l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
//		return orders.Update(ctx, db, id, token, state) // Commit's ctx
//	})
//
// Commit's context is not cancelled when the lease is lost, so a write that
// comes late still reaches the store, which refuses it (a *StaleError) and
// counts it. A write made on the lease's own context (in a middleware handler,
// the request's) is cancelled in the client at the loss instead: the store
// never sees it and counts nothing. A resource written through a Table or
// RedisStore.Write needs no middleware.Guard in front of it; middleware's
// ExampleHTTP_commit runs a late write into a store.
//
// # Tokens a resource can trust
//
// A Token carries the key it was minted for (its Scope, a hash of the lease
// namespace and the key) and, when the Lockers have Secrets, a signature.
// Every store checks both before it compares the fence with the mark, and
// refuses what it cannot trust without moving the mark: a token of another
// key (ErrForeign), one not signed with its secrets (ErrForged), a plain
// number (ErrUnscoped, unless RedisConfig.PlainTokens), and, without
// secrets, a fence further ahead of the store's own clock than
// RedisConfig.MaxSkew (ErrAhead), which no Locker can have minted: so the
// worst a forger achieves is a refusal, never a mark the resource cannot get
// back from. These refusals are counted by their reason, never as stale
// writes. The wire form, the checks and the migration from plain numbers are
// described once, in SECURITY.md.
//
// # Stores
//
// RedisStore keeps a value and its key's mark in one Redis hash and checks
// and writes them in one Lua script, on a single node or Redis Cluster. A
// mark is only as durable as the Redis that holds it: one that restarts
// empty forgets every mark and accepts the next late write, however old its
// token. RedisStore.Check refuses, at start-up, a Redis that keeps neither
// an append-only file nor snapshots (or may evict a mark); RELIABILITY.md
// says what a crash still takes back with each setting. The leases' Redis
// may keep nothing; the store's may not.
//
// Two constructors return a Table, which writes rows of an SQL table, with
// the row's mark in a column of its own (TableConfig) and the check in the
// statement that writes, so code written against Table runs on either
// database:
//
//   - NewPostgresTable, for PostgreSQL: the check is the UPDATE's (or the
//     INSERT ... ON CONFLICT's) WHERE clause, re-evaluated by READ
//     COMMITTED on the committed row; the stricter levels fail the later
//     of two conflicting writes instead.
//   - NewMySQLTable, for MySQL and MariaDB (InnoDB): the check is the
//     UPDATE's WHERE clause, or is inside each assignment of INSERT ... ON
//     DUPLICATE KEY UPDATE; both lock the row and compare with its latest
//     committed mark at every isolation level. It assumes the key column
//     is the only unique index and the connection does not set
//     clientFoundRows.
//
// All three are strict: a write whose token equals the mark is stale, so a
// replayed request never writes twice, with one exception: a copy of the
// write that set the mark. go-redis re-sends a command whose reply was
// lost, so each RedisStore.Write carries a random id, and a copy that finds
// its own id beside the mark succeeds, counted as one accepted check;
// database/sql sends a statement once, so the SQL tables need no id. All
// three tell a stale token (*StaleError, with the mark) from a missing row
// (ErrNotFound, an SQL Update only). A guard in front of a service that
// serializes its writes instead admits requests with an Admitter
// (RedisStore.Admit), which lets the several requests of one lease through
// and stops an older lease's.
//
// Every check is recorded through the telemetry package
// (RedisConfig.Telemetry, TableConfig.Telemetry; the global providers by
// default): the fence.check span, lockwatch.fence.checks by result and
// lockwatch.fence.rejections, whose exemplars lead to the trace of the write
// that came late. A store that fails (Redis or the database erring, or the
// caller's context ending) returns that error wrapped with the operation and
// resource ("update orders: context canceled"), never as the fence's: only
// the fence's own errors start with "fence:". It is not a rejection and is
// not counted as one.
//
// # Repair
//
// A mark only grows, so one that a token no lease carried (a bad or forged
// one, a number from elsewhere) moved ahead of every fence minted for its
// key refuses all of the key's holders as stale until minting passes it;
// fences follow Redis TIME in microseconds, so that may be months.
// RedisStore.Repair sets such a mark back, in one script, to the newest
// fence minted or the store's clock plus MaxSkew, whichever is later, and
// counts it in lockwatch.fence.repairs; lockwatch fence shows the mark
// beside the fences minted and, with --force, repairs it. A fenced SQL table
// is repaired in the database with one statement, which Repair's doc gives.
package fence

// Package pgtest gives integration tests a PostgreSQL database of their own.
//
// The fence package claims that its SQL statements check a write's fencing
// token and make the write in one atomic step, under concurrency. Only a
// real server can confirm that: how PostgreSQL re-checks a WHERE clause on a
// row another transaction just updated, or how INSERT ... ON CONFLICT locks
// the conflicting row, are properties of the server, not of the SQL text.
//
// Unlike redis-server, PostgreSQL is not started per test: a cluster takes
// seconds to initialise and needs a dedicated system user. The tests share
// one server, named by LOCKWATCH_POSTGRES_DSN (default DefaultDSN, the
// server `make deps` provides), and isolate themselves with schemas instead:
// Open creates a schema with a unique name, connects with that schema as
// the search_path runtime parameter, so that unqualified names in the test
// resolve to it, and drops it with everything in it when the test ends.
// Tests may therefore create tables with fixed names and run in parallel,
// within a package and across packages. A test process that is killed
// leaves its schemas behind; they are all named pgtest_<test name>_<random>.
//
// Require decides whether such tests may run at all: when the server does not
// answer, they are skipped locally, but with LOCKWATCH_REQUIRE_INTEGRATION=1
// (as in CI) they fail, so a broken CI image can never turn the integration
// suite into a silent no-op.
package pgtest

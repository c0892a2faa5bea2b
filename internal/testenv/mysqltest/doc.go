// Package mysqltest gives integration tests a MySQL or MariaDB database of
// their own.
//
// The fence package claims that NewMySQLTable's statements check a write's
// fencing token and make the write in one atomic step, under concurrency,
// as NewPostgresTable's do on PostgreSQL. Only a real server can confirm that:
// how InnoDB locks the row an UPDATE or an INSERT ... ON DUPLICATE KEY
// UPDATE reads, and in which order it evaluates assignments, are properties
// of the server, not of the SQL text.
//
// Like PostgreSQL in internal/testenv/pgtest, the server is not started per test.
// The tests share one, named by LOCKWATCH_MYSQL_DSN in go-sql-driver/mysql's
// form (default DefaultDSN, the server `make deps` provides), and isolate
// themselves with databases instead: Open creates a database with a unique
// name, returns a handle whose connections all use it as their default
// database, so that unqualified names in the test resolve to it, and drops
// it with everything in it when the test ends. Tests may therefore create
// tables with fixed names and run in parallel, within a package and across
// packages. A test process that is killed leaves its databases behind; they
// are all named mysqltest_<test name>_<random>.
//
// Require decides whether such tests may run at all: when the server does not
// answer, they are skipped locally, but with LOCKWATCH_REQUIRE_INTEGRATION=1
// (as in CI) they fail, so a broken CI image can never turn the integration
// suite into a silent no-op.
package mysqltest

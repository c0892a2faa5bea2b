package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// DSNEnv names the variable that points the tests at a server; DefaultDSN is
// used when it is unset or empty. The password of the default only matters
// where the server asks for one (a fresh Debian install does, over TCP).
const (
	DSNEnv     = "LOCKWATCH_POSTGRES_DSN"
	DefaultDSN = "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"
)

// timeout bounds each administrative step (connect, create, drop): on
// loopback they take milliseconds, so a stall is a broken server.
const timeout = 30 * time.Second

var reach integration.Probe

// DSN returns the connection string the tests use.
func DSN() string { return integration.DSN(DSNEnv, DefaultDSN) }

// Require reports whether PostgreSQL can be used. If the server at DSN()
// cannot be reached and queried: with env LOCKWATCH_REQUIRE_INTEGRATION=1 it
// calls t.Fatalf (never a silent skip in CI), otherwise t.Skip.
func Require(t testing.TB) {
	t.Helper()
	reach.Require(t, "pgtest", "PostgreSQL", func() error { return probe(DSN()) })
}

func probe(dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("%s: %w", DSNEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// Open calls Require, creates a fresh schema and returns a database handle
// (pgx through database/sql) whose connections all use that schema as their
// search_path: CREATE TABLE t ... in the test creates it there. On
// t.Cleanup the handle is closed and the schema dropped with everything in
// it; a failure to drop fails the test.
func Open(t testing.TB) *sql.DB {
	t.Helper()
	Require(t)
	cfg, err := pgx.ParseConfig(DSN())
	if err != nil {
		t.Fatalf("pgtest: %s: %v", DSNEnv, err)
		return nil
	}
	schema := integration.Name("pgtest", t.Name(), 63)
	ident := pgx.Identifier{schema}.Sanitize()
	if err := Admin(context.Background(), cfg, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
		return nil
	}
	t.Cleanup(func() {
		if err := Admin(context.Background(), cfg, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})

	// The same setting as search_path=<schema> in the DSN's query: a runtime
	// parameter sent at connection start-up, so it holds on every
	// connection the pool opens, not only the one a SET would reach.
	conf := cfg.Copy()
	conf.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*conf)
	// Registered after the drop, so it runs before it: the schema cannot be
	// dropped while a connection of the test still holds a lock in it.
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("pgtest: close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got string
	if err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&got); err != nil {
		t.Fatalf("pgtest: connect with search_path %s: %v", schema, err)
		return nil
	}
	if got != schema {
		t.Fatalf("pgtest: current_schema() is %q, want %q", got, schema)
		return nil
	}
	return db
}

// Admin runs one statement (schema set-up, clean-up) on a connection of its
// own, bounded by ctx and 30 seconds: it needs no pool, and works while a
// pool's search_path points at a schema being created or dropped.
func Admin(ctx context.Context, cfg *pgx.ConnConfig, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

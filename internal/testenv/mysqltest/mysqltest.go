package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// DSNEnv names the variable that points the tests at a server; DefaultDSN is
// used when it is unset or empty: root without a password over loopback TCP,
// which `make deps` arranges on a fresh install.
const (
	DSNEnv     = "LOCKWATCH_MYSQL_DSN"
	DefaultDSN = "root@tcp(127.0.0.1:3306)/test"
)

// timeout bounds each administrative step (connect, create, drop): on
// loopback they take milliseconds, so a stall is a broken server.
const timeout = 30 * time.Second

var reach integration.Probe

// DSN returns the connection string the tests use.
func DSN() string { return integration.DSN(DSNEnv, DefaultDSN) }

// Require reports whether MySQL can be used. If the server at DSN() cannot
// be reached and queried: with env LOCKWATCH_REQUIRE_INTEGRATION=1 it calls
// t.Fatalf (never a silent skip in CI), otherwise t.Skip.
func Require(t testing.TB) {
	t.Helper()
	reach.Require(t, "mysqltest", "MySQL", func() error { return probe(DSN()) })
}

func probe(dsn string) error {
	cfg, err := config(dsn)
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return Admin(ctx, cfg, "SELECT 1")
}

// config parses dsn. A DSN that sets clientFoundRows is refused: with it a
// stale Upsert of a fence.NewMySQLTable table reports an affected row, and
// the tests would test something the fence package says not to do.
func config(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DSNEnv, err)
	}
	if cfg.ClientFoundRows {
		return nil, fmt.Errorf("%s: clientFoundRows=true changes what affected rows mean; leave it unset", DSNEnv)
	}
	return cfg, nil
}

// Open calls Require, creates a fresh database and returns a handle
// (go-sql-driver/mysql through database/sql) whose connections all use it
// as their default database: CREATE TABLE t ... in the test creates it
// there. On t.Cleanup the handle is closed and the database dropped with
// everything in it; a failure to drop fails the test.
func Open(t testing.TB) *sql.DB {
	t.Helper()
	Require(t)
	cfg, err := config(DSN())
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
		return nil
	}
	name := integration.Name("mysqltest", t.Name(), 64)
	// The name is [a-z0-9_] only (integration.Name), so the backticks need no
	// escaping.
	if err := Admin(context.Background(), cfg, "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("mysqltest: create database %s: %v", name, err)
		return nil
	}
	t.Cleanup(func() {
		if err := Admin(context.Background(), cfg, "DROP DATABASE `"+name+"`"); err != nil {
			t.Errorf("mysqltest: drop database %s: %v", name, err)
		}
	})

	conf := cfg.Clone()
	conf.DBName = name
	conn, err := mysql.NewConnector(conf)
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
		return nil
	}
	db := sql.OpenDB(conn)
	// Registered after the drop, so it runs before it: DROP DATABASE waits
	// for the metadata locks an open transaction of the test holds.
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("mysqltest: close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&got); err != nil {
		t.Fatalf("mysqltest: connect to database %s: %v", name, err)
		return nil
	}
	if got.String != name {
		t.Fatalf("mysqltest: DATABASE() is %q, want %q", got.String, name)
		return nil
	}
	return db
}

// Admin runs one statement (database set-up, clean-up) on a connection of
// its own, bounded by ctx and 30 seconds: it needs no pool.
func Admin(ctx context.Context, cfg *mysql.Config, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
)

// Resource names of the two fenced stores: bounded metric attributes.
const (
	resourceRedis = "chaos_redis"
	resourcePG    = "chaos_pg"
	fenceNS       = "lockwatch-chaos:fence"
	plainNS       = "lockwatch-chaos:plain:" // -unfenced writes
)

// opTimeout bounds one register operation. Neither store is ever faulted,
// so only a broken machine reaches it; a write that does is unknown.
const opTimeout = 5 * time.Second

// schemaSQL creates the SQL registers and an audit log filled by a trigger.
// The row lock an UPDATE takes serializes the writes of one key, and the
// trigger runs under it, so the audit's sequence numbers give the exact
// order in which PostgreSQL accepted each key's writes: the fence-order check
// then needs no inference from client-side times.
const schemaSQL = `
CREATE TABLE registers (
	key   text PRIMARY KEY,
	value text NOT NULL,
	fence bigint NOT NULL DEFAULT 0
);
CREATE TABLE audit (
	seq   bigserial PRIMARY KEY,
	key   text NOT NULL,
	fence bigint NOT NULL,
	value text NOT NULL
);
CREATE FUNCTION audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO audit (key, fence, value) VALUES (NEW.key, NEW.fence, NEW.value);
	RETURN NEW;
END $$;
CREATE TRIGGER audit_write AFTER INSERT OR UPDATE ON registers FOR EACH ROW EXECUTE FUNCTION audit_write();
`

// createSchema creates a schema of the run's own with the registers in it,
// and returns its name and a function that drops it.
func createSchema(ctx context.Context, dsn string) (string, func() error, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("-dsn: %w", err)
	}
	var random [6]byte
	_, _ = rand.Read(random[:])
	schema := "lockwatch_chaos_" + hex.EncodeToString(random[:])
	ident := pgx.Identifier{schema}.Sanitize()
	admin := func(ctx context.Context, stmt string) error { return pgtest.Admin(ctx, cfg, stmt) }
	if err := admin(ctx, "CREATE SCHEMA "+ident+"; SET search_path TO "+ident+";"+schemaSQL); err != nil {
		_ = admin(context.Background(), "DROP SCHEMA IF EXISTS "+ident+" CASCADE")
		return "", nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	drop := func() error { return admin(context.Background(), "DROP SCHEMA "+ident+" CASCADE") }
	return schema, drop, nil
}

// openDB connects with schema as the search_path of every connection.
func openDB(dsn, schema string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(4)
	return db, nil
}

// registers writes and reads one process's view of the fenced registers.
type registers struct {
	unfenced bool
	client   *redis.Client // the fence store's redis-server
	store    *fence.RedisStore
	db       *sql.DB
	table    fence.Table
	guard    *guardClient
}

// newRegisters opens both stores and a client of the guarded register
// (served by the parent). The Redis client never retries a command
// on its own (MaxRetries -1): a retried write could be answered "stale"
// by its own first attempt, and a register history must say exactly what
// each call returned.
func newRegisters(fenceAddr, dsn, schema string, guard guardAddrs, tel *telemetry.Telemetry, unfenced bool) (*registers, error) {
	gc, err := newGuardClient(guard)
	if err != nil {
		return nil, err
	}
	db, err := openDB(dsn, schema)
	if err != nil {
		_ = gc.close()
		return nil, err
	}
	table, err := fence.NewPostgresTable(fence.TableConfig{
		Table: "registers", KeyColumn: "key", FenceColumn: "fence", Columns: []string{"value"}, Resource: resourcePG,
		LockNamespace: lockNamespace, Telemetry: tel,
	})
	if err != nil {
		_ = errors.Join(db.Close(), gc.close())
		return nil, err
	}
	client := redis.NewClient(&redis.Options{Addr: fenceAddr, MaxRetries: -1, ContextTimeoutEnabled: true})
	return &registers{
		unfenced: unfenced,
		client:   client,
		store:    fence.NewRedisStore(client, resourceRedis, fence.RedisConfig{Namespace: fenceNS, LockNamespace: lockNamespace, Telemetry: tel}),
		db:       db,
		table:    table,
		guard:    gc,
	}, nil
}

func (r *registers) close() error {
	return errors.Join(r.client.Close(), r.db.Close(), r.guard.close())
}

// write writes value with token to key's register in reg, and fills in the
// outcome: ok, stale (with the high-water mark), or unknown. midway, if not
// nil, runs while the write is under way: for the guarded register with
// its request sent and unfinished (guardClient.write), for the others,
// whose writes are one step, before it.
func (r *registers) write(ctx context.Context, o *op, midway func()) {
	if midway == nil {
		midway = func() {}
	}
	if o.Reg == regGuard {
		r.guard.write(ctx, o, midway)
		return
	}
	midway()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var err error
	switch {
	case o.Reg == regRedis && r.unfenced:
		err = r.client.HSet(ctx, plainNS+o.Key, "value", o.Value, "mark", o.Fence).Err()
	case o.Reg == regRedis:
		err = r.store.Write(ctx, o.Key, o.Token, []byte(o.Value))
	case r.unfenced:
		_, err = r.db.ExecContext(ctx, `INSERT INTO registers (key, value, fence) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, fence = EXCLUDED.fence`, o.Key, o.Value, o.Fence)
	default:
		err = r.table.Upsert(ctx, r.db, o.Key, o.Token, o.Value)
	}
	var stale *fence.StaleError
	switch {
	case err == nil:
		o.Outcome = outOK
	case errors.As(err, &stale):
		// The Redis script reads the mark in the step that rejects; the
		// SQL helper reads it with a second statement, after the fact.
		o.Outcome, o.Mark, o.Exact = outStale, stale.HighWater, o.Reg == regRedis
	default:
		o.Outcome = outUnknown
	}
}

// read reads key's register in reg: its value and mark.
func (r *registers) read(ctx context.Context, o *op) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var err error
	switch {
	case o.Reg == regRedis && r.unfenced:
		var vals []any
		vals, err = r.client.HMGet(ctx, plainNS+o.Key, "value", "mark").Result()
		if err == nil && vals[0] != nil {
			o.Value, _ = vals[0].(string)
			_, err = fmt.Sscan(vals[1].(string), &o.Mark)
		}
	case o.Reg == regRedis:
		var v []byte
		v, o.Mark, err = r.store.Read(ctx, o.Key)
		o.Value = string(v)
	default:
		err = r.db.QueryRowContext(ctx, `SELECT value, fence FROM registers WHERE key = $1`, o.Key).Scan(&o.Value, &o.Mark)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	}
	if err != nil {
		o.Outcome = outError // a read changes nothing: a failed one is left out of the check
		return
	}
	o.Outcome = outOK
}

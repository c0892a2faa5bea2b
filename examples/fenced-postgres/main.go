// Command fenced-postgres runs a pool of workers that process jobs, each
// under the lockwatch lease on its job, and write each job's result row to
// PostgreSQL through the fence.Table of fence.NewPostgresTable. The token
// check is part of the write itself:
//
//	INSERT INTO "jobs" AS "fenced" ("id", "result", "worker", "last_fence") VALUES ($1, $2, $3, $4::bigint)
//	ON CONFLICT ("id") DO UPDATE SET ... WHERE "fenced"."last_fence" < EXCLUDED."last_fence"::bigint
//
// so a worker whose lease ended while it was stuck cannot overwrite the
// result of the worker that took the job after it.
//
//	go run ./examples/fenced-postgres -redis 127.0.0.1:6379 -dsn postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable
//
// -dsn defaults to $LOCKWATCH_POSTGRES_DSN, else the DSN above. The table
// (-table, default lockwatch_example_jobs) is created if it does not exist
// and left in place. With -stuck (the default) worker 1 gets stuck inside
// its first write for longer than the lease's max hold: its lease ends,
// another worker takes the job and writes it, and the stuck write is then
// rejected (fence.ErrStale): nothing is overwritten.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
)

const defaultDSN = "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"

type config struct {
	redis    string
	dsn      string
	table    string
	workers  int
	jobs     int
	duration time.Duration
	ttl      time.Duration
	stuck    bool
}

// result counts what the workers did.
type result struct {
	written, contended, unknown, stale atomic.Int64
}

func main() {
	cfg := config{dsn: os.Getenv("LOCKWATCH_POSTGRES_DSN")}
	if cfg.dsn == "" {
		cfg.dsn = defaultDSN
	}
	flag.StringVar(&cfg.redis, "redis", "127.0.0.1:6379", "Redis address (host:port)")
	flag.StringVar(&cfg.dsn, "dsn", cfg.dsn, "PostgreSQL connection string (default $LOCKWATCH_POSTGRES_DSN)")
	flag.StringVar(&cfg.table, "table", "lockwatch_example_jobs", "table for the job results (created if missing)")
	flag.IntVar(&cfg.workers, "workers", 4, "workers in the pool")
	flag.IntVar(&cfg.jobs, "jobs", 6, "jobs the workers compete for")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long the pool runs")
	flag.DurationVar(&cfg.ttl, "ttl", time.Second, "lease TTL; a job may hold its lease for 2 TTLs")
	flag.BoolVar(&cfg.stuck, "stuck", true, "worker 1 gets stuck in its first write past its lease")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	_, err := run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fenced-postgres:", err)
		os.Exit(1)
	}
}

// run creates the table, runs the pool for the duration (or until ctx is
// done), and prints what happened and the rows.
func run(ctx context.Context, cfg config, out io.Writer) (*result, error) {
	db, err := sql.Open("pgx", cfg.dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS "`+cfg.table+`" (
		id         text PRIMARY KEY,
		result     text NOT NULL,
		worker     integer NOT NULL,
		last_fence bigint NOT NULL DEFAULT 0
	)`); err != nil {
		return nil, fmt.Errorf("create the table: %w", err)
	}
	// The fenced writes: Upsert's WHERE clause holds the token check. A
	// job's row is written under the lease of "job:<id>": LockKey names
	// it, so that a token of another job is refused.
	jobs, err := fence.NewPostgresTable(fence.TableConfig{
		Table: cfg.table, KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"result", "worker"},
		LockKey: func(id any) string { return "job:" + id.(string) },
	})
	if err != nil {
		return nil, err
	}

	client := redis.NewClient(&redis.Options{Addr: cfg.redis, ContextTimeoutEnabled: true})
	defer client.Close()
	// A job may hold its lease for 2 TTLs at most: a worker stuck longer
	// loses it (max_hold), and the job's key expires for another to take.
	locker := lease.NewLocker(client, lease.Config{Name: "jobs", TTL: cfg.ttl, MaxHold: 2 * cfg.ttl})
	defer locker.Close()

	runCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	res := &result{}
	var wg sync.WaitGroup
	for w := 1; w <= cfg.workers; w++ {
		p := &worker{id: w, cfg: cfg, db: db, jobs: jobs, locker: locker, res: res, out: out, stuck: cfg.stuck && w == 1}
		wg.Go(func() { p.run(runCtx) })
	}
	wg.Wait()

	fmt.Fprintf(out, "\n%d results written, %d stale writes rejected by the fence, %d acquires contended, %d unknown\n",
		res.written.Load(), res.stale.Load(), res.contended.Load(), res.unknown.Load())
	rows, err := db.QueryContext(context.WithoutCancel(ctx), `SELECT id, result, last_fence FROM "`+cfg.table+`" ORDER BY id`)
	if err != nil {
		return res, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, r string
		var f int64
		if err := rows.Scan(&id, &r, &f); err != nil {
			return res, err
		}
		fmt.Fprintf(out, "  %-8s %-30s last_fence %d\n", id, r, f)
	}
	return res, rows.Err()
}

type worker struct {
	id     int
	cfg    config
	db     *sql.DB
	jobs   fence.Table
	locker *lease.Locker
	res    *result
	out    io.Writer
	stuck  bool // gets stuck in its first write
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		job := "job-" + strconv.Itoa(rand.N(w.cfg.jobs)+1)
		if err := w.process(ctx, job); err != nil && ctx.Err() == nil {
			fmt.Fprintf(w.out, "worker %d: %s: %v\n", w.id, job, err)
		}
		select {
		case <-time.After(time.Duration(rand.N(20)+5) * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// process computes job under its lease and writes the result with the
// lease's fencing token.
func (w *worker) process(ctx context.Context, job string) error {
	l, err := w.locker.Acquire(ctx, "job:"+job)
	switch {
	case errors.Is(err, lease.ErrNotAcquired):
		w.res.contended.Add(1)
		return nil // another worker has it
	case errors.Is(err, lease.ErrUnknown):
		w.res.unknown.Add(1)
		return nil // Redis may or may not have granted it: do not run the job
	case err != nil:
		return err
	}
	defer l.Release(context.WithoutCancel(ctx))

	// The work runs on the lease's context: cancelled if the lease is lost.
	select {
	case <-time.After(time.Duration(rand.N(10)+1) * time.Millisecond):
	case <-l.Context().Done():
		return context.Cause(l.Context())
	}
	result := fmt.Sprintf("computed by worker %d", w.id)

	err = l.Commit(l.Context(), func(ctx context.Context, token fence.Token) error {
		if w.stuck {
			// A pause at the worst moment: after Commit checked the lease,
			// before the write. Longer than the max hold.
			w.stuck = false
			fmt.Fprintf(w.out, "worker %d: stuck for %v in its write of %s (fence %d)\n", w.id, 4*w.cfg.ttl, job, token.Fence)
			time.Sleep(4 * w.cfg.ttl)
		}
		return w.jobs.Upsert(ctx, w.db, job, token, result, w.id)
	})
	var stale *fence.StaleError
	switch {
	case errors.As(err, &stale):
		w.res.stale.Add(1)
		fmt.Fprintf(w.out, "worker %d: write of %s with fence %d rejected: the row already has fence %d\n",
			w.id, job, stale.Token.Fence, stale.HighWater)
		return nil
	case err != nil:
		return err
	}
	w.res.written.Add(1)
	return nil
}

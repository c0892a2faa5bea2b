// Command singleton runs a worker that must run once across its replicas
// (a scheduler, a relay, a reconciler) as the leader of a lockwatch
// election, writing to PostgreSQL with its term's fencing token, so that a
// leader deposed while a write was under way cannot write after its
// successor has begun.
//
//	go run ./examples/singleton -redis 127.0.0.1:6379 -dsn postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable
//
// Several candidates (-candidates) run in this process, each with its own
// Redis client and Locker, as replicas would. The leader ticks every
// -tick and records each tick in the ticks table. Its writes are fenced in
// two steps:
//
//   - A term starts by claiming the leader row with its token through a
//     fence.Table (NewPostgresTable): Upsert moves the row's last_fence to
//     the token in the statement that checks it, so every older term is
//     barred from then on, and a token minted for another key or forged is
//     refused.
//
//   - Each tick is one statement that locks the leader row and inserts only
//     while last_fence is still the term's:
//
//     WITH term AS (SELECT 1 FROM leader WHERE name = $1 AND last_fence = $2 FOR UPDATE)
//     INSERT INTO ticks (term, worker) SELECT $2, $3 FROM term
//
//     A deposed leader's insert finds a newer fence and inserts nothing; one
//     already under way when the successor claims is ordered before the
//     claim by the row lock. A term writes as often as it likes, which a
//     strict fence.Table write (one per token and row) would not allow.
//
// With -stuck (the default) candidate 1 freezes for 3 TTLs in its sixth
// tick, its Redis traffic with it, like a stop-the-world pause: its term is
// lost before its key can expire, the next candidate is elected and
// claims the row, and the frozen insert then finds the newer term and
// inserts nothing.
//
// What carries over to a service: election.Run with the work on the term's
// context; the claim through a fence.Table at the term's start; each write
// in a statement (or a transaction) that locks the claimed row and checks
// its fence. The tables (-prefix, default lockwatch_singleton_) are created
// if they do not exist and left in place; -dsn defaults to
// $LOCKWATCH_POSTGRES_DSN.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
)

const defaultDSN = "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"

// key is the election's key: the lock key its terms' tokens are minted
// for, and the leader row's name.
const key = "singleton-ticker"

type config struct {
	redis      string
	dsn        string
	prefix     string
	candidates int
	duration   time.Duration
	ttl        time.Duration
	tick       time.Duration
	stuck      bool
}

// result counts what the candidates did.
type result struct {
	terms, ticks, stale atomic.Int64
}

func main() {
	cfg := config{dsn: os.Getenv("LOCKWATCH_POSTGRES_DSN")}
	if cfg.dsn == "" {
		cfg.dsn = defaultDSN
	}
	flag.StringVar(&cfg.redis, "redis", "127.0.0.1:6379", "Redis address (host:port)")
	flag.StringVar(&cfg.dsn, "dsn", cfg.dsn, "PostgreSQL connection string (default $LOCKWATCH_POSTGRES_DSN)")
	flag.StringVar(&cfg.prefix, "prefix", "lockwatch_singleton_", "prefix of the tables (created if missing)")
	flag.IntVar(&cfg.candidates, "candidates", 3, "candidates for leader")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long the candidates run")
	flag.DurationVar(&cfg.ttl, "ttl", time.Second, "the terms' lease TTL")
	flag.DurationVar(&cfg.tick, "tick", 100*time.Millisecond, "how often the leader records a tick")
	flag.BoolVar(&cfg.stuck, "stuck", true, "candidate 1 freezes in its first tick past its term")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	_, err := run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "singleton:", err)
		os.Exit(1)
	}
}

// run creates the tables, runs the candidates for the duration (or until
// ctx is done), and prints the ticks each term recorded.
func run(ctx context.Context, cfg config, out io.Writer) (*result, error) {
	db, err := sql.Open("pgx", cfg.dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	leaderTable, ticksTable := cfg.prefix+"leader", cfg.prefix+"ticks"
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS "`+leaderTable+`" (
		name text PRIMARY KEY, leader text NOT NULL, last_fence bigint NOT NULL DEFAULT 0);
		CREATE TABLE IF NOT EXISTS "`+ticksTable+`" (
		id bigserial PRIMARY KEY, term bigint NOT NULL, worker text NOT NULL)`); err != nil {
		return nil, fmt.Errorf("create the tables: %w", err)
	}
	// The claim: a fenced Upsert of the leader row, whose tokens must be
	// minted for the election's key.
	claims, err := fence.NewPostgresTable(fence.TableConfig{
		Table: leaderTable, KeyColumn: "name", FenceColumn: "last_fence", Columns: []string{"leader"},
	})
	if err != nil {
		return nil, err
	}
	res := &result{}
	w := &worker{cfg: cfg, db: db, claims: claims, res: res, out: out, led: make(chan struct{}),
		insertTick: `WITH term AS (SELECT 1 FROM "` + leaderTable + `" WHERE name = $1 AND last_fence = $2 FOR UPDATE)
		INSERT INTO "` + ticksTable + `" (term, worker) SELECT $2, $3 FROM term`}

	runCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	// Candidate 1 starts first, so that it leads first; the others queue
	// once a term has started.
	var wg sync.WaitGroup
	errs := make([]error, cfg.candidates)
	for i := range cfg.candidates {
		if i == 1 {
			select {
			case <-w.led:
			case <-runCtx.Done():
			}
		}
		wg.Go(func() { errs[i] = w.candidate(runCtx, i+1) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	fmt.Fprintf(out, "\n%d terms, %d ticks, %d stale writes refused\n", res.terms.Load(), res.ticks.Load(), res.stale.Load())
	return res, printTicks(context.WithoutCancel(ctx), db, ticksTable, out)
}

// worker is what every candidate shares: the database and the statements.
type worker struct {
	cfg        config
	db         *sql.DB
	claims     fence.Table
	insertTick string
	res        *result
	out        io.Writer
	stuckOnce  sync.Once
	led        chan struct{} // closed when the first term starts
	ledOnce    sync.Once
}

// candidate campaigns as candidate n until ctx ends, on a Redis client and
// Locker of its own.
func (w *worker) candidate(ctx context.Context, n int) error {
	name := "candidate-" + strconv.Itoa(n)
	freeze := &freezer{}
	client := redis.NewClient(&redis.Options{Addr: w.cfg.redis, ContextTimeoutEnabled: true})
	client.AddHook(freeze)
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: w.cfg.ttl})
	defer locker.Close()
	e, err := election.New(locker, key, election.Config{Identity: name, Pause: w.cfg.ttl / 4})
	if err != nil {
		return err
	}
	err = e.Run(ctx, func(ctx context.Context, t election.Term) error {
		w.lead(ctx, t, n, freeze)
		return nil // the term ended (ctx): Run campaigns again
	})
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// lead is the leader's work for one term: claim the leader row, then
// record a tick every cfg.tick until the term's context ends.
func (w *worker) lead(ctx context.Context, t election.Term, n int, freeze *freezer) {
	w.res.terms.Add(1)
	w.ledOnce.Do(func() { close(w.led) })
	fmt.Fprintf(w.out, "%s leads term %d\n", t.Identity, t.Fence)
	if err := w.claims.Upsert(ctx, w.db, key, t.Token, t.Identity); err != nil {
		fmt.Fprintf(w.out, "%s: claim of term %d: %v\n", t.Identity, t.Fence, err)
		<-ctx.Done() // deposed already: its work waits for the term's end
		return
	}
	tick := time.NewTicker(w.cfg.tick)
	defer tick.Stop()
	for i := 0; ; i++ {
		if w.cfg.stuck && n == 1 && i == 5 {
			w.stuckOnce.Do(func() { w.freeze(t, freeze) })
		}
		// The insert is not cancelled with the term: a write under way
		// reaches the database, which judges its fence.
		r, err := w.db.ExecContext(context.WithoutCancel(ctx), w.insertTick, key, t.Fence, t.Identity)
		if err == nil {
			err = w.counted(t, r)
		}
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(w.out, "%s: tick of term %d: %v\n", t.Identity, t.Fence, err)
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// counted counts an insert: a tick, or a stale write when the leader row
// had moved on to a newer term.
func (w *worker) counted(t election.Term, r sql.Result) error {
	n, err := r.RowsAffected()
	switch {
	case err != nil:
		return err
	case n == 0:
		w.res.stale.Add(1)
		fmt.Fprintf(w.out, "%s: tick of term %d refused: the leader row has a newer term\n", t.Identity, t.Fence)
	default:
		w.res.ticks.Add(1)
	}
	return nil
}

// freeze stops the leader for 3 TTLs, its Redis traffic with it, as a
// stop-the-world pause would.
func (w *worker) freeze(t election.Term, f *freezer) {
	d := 3 * w.cfg.ttl
	fmt.Fprintf(w.out, "%s freezes for %v in a tick of term %d\n", t.Identity, d, t.Fence)
	f.until.Store(time.Now().Add(d).UnixNano())
	time.Sleep(d)
}

// printTicks prints how many ticks each term recorded, in the order they
// were recorded.
func printTicks(ctx context.Context, db *sql.DB, table string, out io.Writer) error {
	rows, err := db.QueryContext(ctx, `SELECT term, worker, count(*) FROM "`+table+`" GROUP BY term, worker ORDER BY min(id)`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var term, n int64
		var worker string
		if err := rows.Scan(&term, &worker, &n); err != nil {
			return err
		}
		fmt.Fprintf(out, "  term %d  %-12s %d ticks\n", term, worker, n)
	}
	return rows.Err()
}

// freezer is a go-redis hook that holds every command until a moment, as
// a frozen process sends nothing until it resumes: the Locker's renewals
// then fail, and the term is lost before its key can expire.
type freezer struct{ until atomic.Int64 } // Unix nanoseconds

func (f *freezer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *freezer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := f.wait(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (f *freezer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := f.wait(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

func (f *freezer) wait(ctx context.Context) error {
	left := time.Until(time.Unix(0, f.until.Load()))
	if left <= 0 {
		return nil
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockwatch/lockwatch/telemetry"
)

// ErrNotFound: Update found no row with the key.
var ErrNotFound = errors.New("fence: no such row")

// SQLConfig describes a table whose rows are fenced: each row carries the
// high-water mark of the lock key that protects it. Identifiers must match
// [A-Za-z_][A-Za-z0-9_]* (at most 63 bytes, PostgreSQL's limit); they are
// quoted in the statements, so they are case-sensitive and may be reserved
// words: a table created as CREATE TABLE Orders is named orders.
type SQLConfig struct {
	// Table is the table name, optionally schema-qualified (schema.table).
	// Required.
	Table string
	// KeyColumn is the primary-key column (or one with a unique
	// constraint, which Upsert's ON CONFLICT needs). Required.
	KeyColumn string
	// FenceColumn holds the row's high-water mark: BIGINT NOT NULL. Rows
	// inserted other than by Upsert should start it at 0, below every
	// token. Required.
	FenceColumn string
	// Columns are the columns a write sets, in the order of its values;
	// distinct, and neither KeyColumn nor FenceColumn. May be empty: the
	// statements then only advance the mark.
	Columns []string
	// Resource is the resource attribute of the fence metrics: a bounded
	// name. Default: Table.
	Resource string
}

// DB is what SQLTable needs of a database handle: *sql.DB, *sql.Tx and
// *sql.Conn all have it. Pass the transaction a write belongs to.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQLTable makes fenced writes to the rows of one PostgreSQL table: each
// statement sets the row's columns and its mark to the write's token only
// where the row's mark is below the token.
//
// The check is the statement's own WHERE clause, never a SELECT of the mark
// before the write. Between such a SELECT and the UPDATE another holder can
// write with a newer token, and the UPDATE then overwrites it with older
// data: the very stale write a fence exists to stop, only made less likely.
// (SELECT ... FOR UPDATE closes the gap, but only inside a transaction, for
// a lock held across a round trip, and only if every writer remembers it.)
// In the statement, PostgreSQL evaluates the condition on the row it locks
// for the write: when a concurrent transaction changed the row first, READ
// COMMITTED re-evaluates the WHERE clause against the committed new
// version, so of two writes with one token exactly one matches, and no write
// lands on a row whose mark it has not compared with. Under REPEATABLE READ
// or SERIALIZABLE the later writer gets a serialization failure instead,
// which the caller retries as usual. INSERT ... ON CONFLICT DO UPDATE ...
// WHERE locks the conflicting row and evaluates its WHERE clause the same
// way.
//
// Unlike go-redis (see RedisStore.Write), database/sql does not re-send a
// statement that may have reached the server, so a write cannot come back
// stale because an earlier copy of it ran: database/sql repeats a statement
// only when the driver returns driver.ErrBadConn, which the driver contract
// reserves for a statement the server cannot have received, and pgx's
// stdlib driver returns it only for errors pgconn marks safe to retry (no
// byte sent). A caller that repeats a write after an error, say a lost reply
// to COMMIT, makes a new write: stale if the first took effect.
//
// Every write with a valid token and the right number of values records a
// fence check (accepted or rejected); a database error or a missing row is
// traced on the fence.check span but not counted.
//
// An SQLTable is safe for concurrent use.
type SQLTable struct {
	table    string // as configured, for messages
	resource string
	columns  int
	update   string
	upsert   string
	mark     string
	tel      *telemetry.Telemetry
}

// identifier is what SQLConfig accepts for a name: no quoting, escaping or
// case folding to get wrong, and nothing that could change the statement.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxIdentifier is PostgreSQL's NAMEDATALEN-1: it silently truncates longer
// names, which could make two configured names one.
const maxIdentifier = 63

// NewSQLTable validates cfg and builds the statements once. WithTelemetry
// applies; WithNamespace does not (it is for Redis keys).
func NewSQLTable(cfg SQLConfig, opts ...Option) (*SQLTable, error) {
	table, err := quoteTable(cfg.Table)
	if err != nil {
		return nil, err
	}
	key, err := quoteColumn("KeyColumn", cfg.KeyColumn)
	if err != nil {
		return nil, err
	}
	fence, err := quoteColumn("FenceColumn", cfg.FenceColumn)
	if err != nil {
		return nil, err
	}
	if cfg.KeyColumn == cfg.FenceColumn {
		return nil, fmt.Errorf("fence: SQLConfig: KeyColumn and FenceColumn are both %q", cfg.KeyColumn)
	}
	seen := map[string]bool{cfg.KeyColumn: true, cfg.FenceColumn: true}
	cols := make([]string, len(cfg.Columns))
	for i, c := range cfg.Columns {
		if cols[i], err = quoteColumn(fmt.Sprintf("Columns[%d]", i), c); err != nil {
			return nil, err
		}
		if seen[c] {
			return nil, fmt.Errorf("fence: SQLConfig: Columns[%d] %q repeats a column (or KeyColumn or FenceColumn)", i, c)
		}
		seen[c] = true
	}
	resource := cfg.Resource
	if resource == "" {
		resource = cfg.Table
	}
	n := len(cols)
	param := func(i int) string { return "$" + strconv.Itoa(i) }
	// The token is cast to bigint: compared with a column of another type
	// (text compares "99" > "100") the statement fails instead of fencing
	// wrongly, whatever the driver sends the parameter as.
	token := func(i int) string { return param(i) + "::bigint" }

	// UPDATE t SET c1 = $1, ..., fence = $n+1 WHERE key = $n+2 AND fence < $n+1
	var u strings.Builder
	u.WriteString("UPDATE " + table + " SET ")
	for i, c := range cols {
		u.WriteString(c + " = " + param(i+1) + ", ")
	}
	u.WriteString(fence + " = " + token(n+1) + " WHERE " + key + " = " + param(n+2) + " AND " + fence + " < " + token(n+1))

	// INSERT INTO t AS fenced (key, c1, ..., fence) VALUES ($1, ..., $n+2)
	// ON CONFLICT (key) DO UPDATE SET c1 = EXCLUDED.c1, ..., fence = EXCLUDED.fence
	// WHERE fenced.fence < EXCLUDED.fence
	// The alias names the existing row whatever the table is called (even
	// "excluded", or schema-qualified).
	var p strings.Builder
	p.WriteString("INSERT INTO " + table + ` AS "fenced" (` + key)
	for _, c := range cols {
		p.WriteString(", " + c)
	}
	p.WriteString(", " + fence + ") VALUES (")
	for i := 1; i <= n+1; i++ {
		p.WriteString(param(i) + ", ")
	}
	p.WriteString(token(n + 2))
	p.WriteString(") ON CONFLICT (" + key + ") DO UPDATE SET ")
	for _, c := range cols {
		p.WriteString(c + " = EXCLUDED." + c + ", ")
	}
	p.WriteString(fence + " = EXCLUDED." + fence + ` WHERE "fenced".` + fence + " < EXCLUDED." + fence + "::bigint")

	c := newStoreConfig(opts)
	return &SQLTable{
		table:    cfg.Table,
		resource: resource,
		columns:  n,
		update:   u.String(),
		upsert:   p.String(),
		mark:     "SELECT " + fence + " FROM " + table + " WHERE " + key + " = $1",
		tel:      c.tel,
	}, nil
}

func quoteColumn(field, name string) (string, error) {
	if len(name) > maxIdentifier || !identifier.MatchString(name) {
		return "", fmt.Errorf("fence: SQLConfig.%s: %q is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", field, name, maxIdentifier)
	}
	return `"` + name + `"`, nil
}

func quoteTable(name string) (string, error) {
	schema, table, qualified := strings.Cut(name, ".")
	if !qualified {
		return quoteColumn("Table", name)
	}
	s, err := quoteColumn("Table", schema)
	if err == nil {
		var t string
		if t, err = quoteColumn("Table", table); err == nil {
			return s + "." + t, nil
		}
	}
	return "", fmt.Errorf("fence: SQLConfig.Table: %q is not an identifier or schema.identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d bytes each)", name, maxIdentifier)
}

// UpdateStatement returns the statement Update runs, with parameters
// $1..$n the Columns' values, $n+1 the token and $n+2 the key:
//
//	UPDATE "t" SET "c1" = $1, ..., "fence" = $n+1::bigint WHERE "key" = $n+2 AND "fence" < $n+1::bigint
//
// One row affected: written. None: stale, or no such row.
func (t *SQLTable) UpdateStatement() string { return t.update }

// UpsertStatement returns the statement Upsert runs, with parameters $1 the
// key, $2..$n+1 the Columns' values and $n+2 the token:
//
//	INSERT INTO "t" AS "fenced" ("key", "c1", ..., "fence") VALUES ($1, ..., $n+2::bigint)
//	ON CONFLICT ("key") DO UPDATE SET "c1" = EXCLUDED."c1", ..., "fence" = EXCLUDED."fence"
//	WHERE "fenced"."fence" < EXCLUDED."fence"::bigint
//
// One row affected: inserted or updated. None: stale.
func (t *SQLTable) UpsertStatement() string { return t.upsert }

// Update sets the Columns of key's row to values and its mark to token, if
// token is greater than the row's mark, in one statement (UpdateStatement).
// Strict: a token the row accepted is never accepted again.
//
// A token at or below the mark is a *StaleError (errors.Is ErrStale) with
// the mark as HighWater, read by a second statement after the write matched
// no row. No row with the key is ErrNotFound (also when one appeared after
// the write found none, so that the answer describes the moment of the
// check). Values of the wrong number, or a token that is not positive
// (ErrMalformed), are errors before any statement runs. Any other error is
// the database's, wrapped.
func (t *SQLTable) Update(ctx context.Context, db DB, key any, token Token, values ...any) error {
	if err := t.valid("update", token, values); err != nil {
		return err
	}
	ctx, c := startCheck(ctx, t.tel, t.resource, token)
	args := make([]any, 0, len(values)+2)
	args = append(append(args, values...), int64(token), key)
	n, err := exec(ctx, db, t.update, args)
	if err != nil {
		return t.fail(c, "update", err)
	}
	if n > 0 {
		c.done(true, 0)
		return nil
	}
	mark, found, err := t.readMark(ctx, db, key)
	if err != nil {
		return t.fail(c, "update: read the mark", err)
	}
	// Marks only grow, so a mark below the token now means the row was not
	// there when the UPDATE looked (it was inserted since).
	if !found || mark < token {
		c.missing()
		return fmt.Errorf("%w in %s", ErrNotFound, t.table)
	}
	c.done(false, mark)
	return &StaleError{Resource: t.resource, Token: token, HighWater: mark}
}

// Upsert inserts key's row with values and token as its mark, or, if the
// row exists, sets its Columns to values and its mark to token when token is
// greater than the mark; in one statement (UpsertStatement). Strict like
// Update.
//
// A token at or below the mark is a *StaleError (errors.Is ErrStale) with
// the mark as HighWater, read by a second statement after the write matched
// no row (0 if the row was deleted in between). Values of the wrong number,
// or a token that is not positive (ErrMalformed), are errors before any
// statement runs. Any other error is the database's, wrapped.
func (t *SQLTable) Upsert(ctx context.Context, db DB, key any, token Token, values ...any) error {
	if err := t.valid("upsert", token, values); err != nil {
		return err
	}
	ctx, c := startCheck(ctx, t.tel, t.resource, token)
	args := make([]any, 0, len(values)+2)
	args = append(append(append(args, key), values...), int64(token))
	n, err := exec(ctx, db, t.upsert, args)
	if err != nil {
		return t.fail(c, "upsert", err)
	}
	if n > 0 {
		c.done(true, 0)
		return nil
	}
	mark, _, err := t.readMark(ctx, db, key)
	if err != nil {
		return t.fail(c, "upsert: read the mark", err)
	}
	if mark < token {
		mark = 0 // deleted, or deleted and inserted again, since: unknown
	}
	c.done(false, mark)
	return &StaleError{Resource: t.resource, Token: token, HighWater: mark}
}

func (t *SQLTable) valid(op string, token Token, values []any) error {
	if len(values) != t.columns {
		return fmt.Errorf("fence: %s %s: %d values for %d columns", op, t.table, len(values), t.columns)
	}
	return validToken(token)
}

func (t *SQLTable) fail(c check, op string, err error) error {
	err = fmt.Errorf("fence: %s %s: %w", op, t.table, err)
	c.failed(err)
	return err
}

func exec(ctx context.Context, db DB, query string, args []any) (int64, error) {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *SQLTable) readMark(ctx context.Context, db DB, key any) (Token, bool, error) {
	var mark sql.NullInt64
	err := db.QueryRowContext(ctx, t.mark, key).Scan(&mark)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return Token(mark.Int64), true, nil
}

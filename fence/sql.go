package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/telemetry"
)

// ErrNotFound: Update found no row with the key.
var ErrNotFound = errors.New("fence: no such row")

// Table makes fenced writes to the rows of one SQL table: the token check is
// part of the statement that writes, never a read before it.
// NewPostgresTable and NewMySQLTable return one, with the same results, so
// code written against Table works on either database: nil when written; a
// *StaleError (errors.Is ErrStale) when the token is at or below the row's
// mark; ErrNotFound when Update finds no row; ErrForeign, ErrForged,
// ErrAhead or ErrUnscoped for a token the table cannot trust for the row's
// lock key (see Token and TableConfig.LockKey), which writes nothing; any
// other error is the database's, wrapped as "update <table>: <the driver's
// error>" (errors.As reaches the driver's type).
type Table interface {
	// Update sets the Columns of key's row to values and its mark to token,
	// if token is greater than the row's mark, in one statement. Strict: a
	// token the row accepted is never accepted again. A stale token's
	// HighWater is read by a second statement after the write matched no
	// row. No row with the key is ErrNotFound, also when one appeared after
	// the write found none (the answer describes the moment of the check).
	// Values of the wrong number, or a token that is not positive
	// (ErrMalformed), are errors before any statement runs.
	Update(ctx context.Context, db DB, key any, token Token, values ...any) error
	// Upsert inserts key's row with values and token as its mark, or, if
	// the row exists, sets its Columns to values and its mark to token when
	// token is greater than the mark; in one statement. Strict like Update;
	// a stale token is a *StaleError whose HighWater is read afterwards (0
	// if the row was deleted in between).
	Upsert(ctx context.Context, db DB, key any, token Token, values ...any) error
}

// TableConfig describes a table whose rows are fenced: each row carries the
// high-water mark of the lock key that protects it. Identifiers must match
// [A-Za-z_][A-Za-z0-9_]*, at most 63 bytes for PostgreSQL (NAMEDATALEN-1)
// and 64 for MySQL and MariaDB; they are quoted in the statements, so they
// may be reserved words. In PostgreSQL quoting makes them case-sensitive (a
// table created as CREATE TABLE Orders is named orders); in MySQL column
// names are never case-sensitive and table names are where the server's
// lower_case_table_names says so.
type TableConfig struct {
	// Table is the table name, optionally qualified: schema.table in
	// PostgreSQL, database.table in MySQL. Required.
	Table string
	// KeyColumn is the primary-key column (or, in PostgreSQL, one with a
	// unique constraint, which Upsert's ON CONFLICT needs). Required.
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
	// LockKey names the lock key whose leases write the row with the
	// given key: a token is refused unless it was minted for that key
	// (ErrForeign). Default: the row key as fmt.Sprint prints it, for a
	// table whose rows are locked by their own key.
	LockKey func(rowKey any) string
	// LockNamespace, Secrets, PlainTokens, MaxSkew and Telemetry are as
	// RedisConfig's fields of the same names say, MaxSkew against the
	// database's clock; a database error or a missing row is traced on the
	// fence.check span but not counted.
	LockNamespace string
	Secrets       *Secrets
	PlainTokens   bool
	MaxSkew       time.Duration
	Telemetry     *telemetry.Telemetry
}

// DB is what a Table needs of a database handle: *sql.DB, *sql.Tx and
// *sql.Conn all have it. Pass the transaction a write belongs to.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// dialect is what differs between the databases: identifier quoting and
// length, the three statements and the order of their arguments.
type dialect struct {
	quote         string // around an identifier
	maxIdentifier int    // longer: refused, or truncated (PostgreSQL: two could become one)
	// statements builds Update's and Upsert's statements and the query of
	// a row's mark (one parameter: the key) from quoted identifiers; the
	// writes hold the clock bound (a NULL skew: none).
	statements func(table, key, fence string, cols []string) (update, upsert, mark string)
	// updateArgs and upsertArgs order a write's arguments for its
	// statement; skew is nil (signed: no bound) or an int64.
	updateArgs, upsertArgs func(key any, token int64, skew any, values []any) []any
	// now reads the database's clock in microseconds, as the bound does.
	now string
}

// identifier is what TableConfig accepts for a name: no quoting, escaping or
// case folding to get wrong, and nothing that could change the statement.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// sqlTable is the Table of both constructors, the dialect aside.
type sqlTable struct {
	d        *dialect
	table    string // as configured, for messages
	resource string
	columns  int
	update   string
	upsert   string
	mark     string
	lockKey  func(any) string
	policy   policy
	tel      *obs.Recorder
}

var _ Table = (*sqlTable)(nil)

// newSQLTable validates cfg and builds the statements once.
func newSQLTable(d *dialect, cfg TableConfig) (*sqlTable, error) {
	table, key, fence, cols, err := d.quoteAll(cfg)
	if err != nil {
		return nil, err
	}
	p, err := tablePolicy(cfg)
	if err != nil {
		return nil, err
	}
	resource := cfg.Resource
	if resource == "" {
		resource = cfg.Table
	}
	lockKey := cfg.LockKey
	if lockKey == nil {
		lockKey = func(k any) string { return fmt.Sprint(k) }
	}
	update, upsert, mark := d.statements(table, key, fence, cols)
	return &sqlTable{
		d:        d,
		table:    cfg.Table,
		resource: resource,
		columns:  len(cols),
		update:   update,
		upsert:   upsert,
		mark:     mark,
		lockKey:  lockKey,
		policy:   p,
		tel:      recorder(cfg.Telemetry),
	}, nil
}

// quoteAll quotes cfg's table and columns, each column named once.
func (d *dialect) quoteAll(cfg TableConfig) (table, key, fence string, cols []string, err error) {
	if table, err = d.quoteTable(cfg.Table); err != nil {
		return
	}
	if key, err = d.quoteColumn("KeyColumn", cfg.KeyColumn); err != nil {
		return
	}
	if fence, err = d.quoteColumn("FenceColumn", cfg.FenceColumn); err != nil {
		return
	}
	if cfg.KeyColumn == cfg.FenceColumn {
		err = fmt.Errorf("fence: TableConfig: KeyColumn and FenceColumn are both %q", cfg.KeyColumn)
		return
	}
	seen := map[string]bool{cfg.KeyColumn: true, cfg.FenceColumn: true}
	cols = make([]string, len(cfg.Columns))
	for i, c := range cfg.Columns {
		if cols[i], err = d.quoteColumn(fmt.Sprintf("Columns[%d]", i), c); err != nil {
			return
		}
		if seen[c] {
			err = fmt.Errorf("fence: TableConfig: Columns[%d] %q repeats a column (or KeyColumn or FenceColumn)", i, c)
			return
		}
		seen[c] = true
	}
	return table, key, fence, cols, nil
}

// tablePolicy is the token policy cfg asks for.
func tablePolicy(cfg TableConfig) (policy, error) {
	p, err := newPolicy(cfg.LockNamespace, cfg.Secrets, cfg.PlainTokens, cfg.MaxSkew)
	if err != nil {
		return policy{}, fmt.Errorf("fence: TableConfig: %w", err)
	}
	return p, nil
}

func (d *dialect) quoteColumn(field, name string) (string, error) {
	if len(name) > d.maxIdentifier || !identifier.MatchString(name) {
		return "", fmt.Errorf("fence: TableConfig.%s: %q is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", field, name, d.maxIdentifier)
	}
	return d.quote + name + d.quote, nil
}

func (d *dialect) quoteTable(name string) (string, error) {
	schema, table, qualified := strings.Cut(name, ".")
	if !qualified {
		return d.quoteColumn("Table", name)
	}
	s, err := d.quoteColumn("Table", schema)
	if err == nil {
		var t string
		if t, err = d.quoteColumn("Table", table); err == nil {
			return s + "." + t, nil
		}
	}
	return "", fmt.Errorf("fence: TableConfig.Table: %q is not an identifier or qualifier.identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d bytes each)", name, d.maxIdentifier)
}

// Update is Table.Update, by the dialect's UPDATE.
func (t *sqlTable) Update(ctx context.Context, db DB, key any, token Token, values ...any) error {
	ctx, c, skew, err := t.start(ctx, "update", key, token, values)
	if err != nil {
		return err
	}
	n, err := exec(ctx, db, t.update, t.d.updateArgs(key, token.Fence, skew, values))
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
	if found && mark >= token.Fence {
		c.done(false, mark)
		return &StaleError{Resource: t.resource, Token: token, HighWater: mark}
	}
	// Not stale: the bound refused it, or the row was inserted since the
	// UPDATE looked (marks only grow).
	if err := t.ahead(ctx, db, c, skew, token); err != nil {
		return err
	}
	c.missing()
	return fmt.Errorf("%w in %s", ErrNotFound, t.table)
}

// Upsert is Table.Upsert. Any affected row is a write (MySQL reports 2 for
// an update); none means a stale token or the clock bound.
func (t *sqlTable) Upsert(ctx context.Context, db DB, key any, token Token, values ...any) error {
	ctx, c, skew, err := t.start(ctx, "upsert", key, token, values)
	if err != nil {
		return err
	}
	n, err := exec(ctx, db, t.upsert, t.d.upsertArgs(key, token.Fence, skew, values))
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
	if mark < token.Fence {
		if err := t.ahead(ctx, db, c, skew, token); err != nil {
			return err
		}
		mark = 0 // deleted, or deleted and inserted again, since: unknown
	}
	c.done(false, mark)
	return &StaleError{Resource: t.resource, Token: token, HighWater: mark}
}

// start checks a write's values and token before any statement runs, and
// starts its check. skew is the clock bound's argument (nil: signed, no
// bound). A refused token ends the check here, counted under its reason.
func (t *sqlTable) start(ctx context.Context, op string, key any, token Token, values []any) (context.Context, check, any, error) {
	if len(values) != t.columns {
		return ctx, check{}, nil, fmt.Errorf("fence: %s %s: %d values for %d columns", op, t.table, len(values), t.columns)
	}
	bounded, err := t.policy.check(t.lockKey(key), token)
	if errors.Is(err, ErrMalformed) {
		return ctx, check{}, nil, err // a caller's bug, not a check: neither counted nor traced
	}
	ctx, c := startCheck(ctx, t.tel, t.resource, token)
	if err != nil {
		return ctx, c, nil, c.refused(fmt.Errorf("%w (%s %s)", err, op, t.table))
	}
	var skew any
	if bounded {
		skew = t.policy.maxSkew.Microseconds()
	}
	return ctx, c, skew, nil
}

// ahead tells, after a bounded write matched nothing although its token is
// above the mark, whether the bound refused it: a token beyond the
// database's clock read now was beyond it then. It ends the check when so
// and returns ErrAhead.
func (t *sqlTable) ahead(ctx context.Context, db DB, c check, skew any, token Token) error {
	if skew == nil {
		return nil
	}
	var now int64
	if err := db.QueryRowContext(ctx, t.d.now).Scan(&now); err != nil {
		return t.fail(c, "read the database's clock", err)
	}
	if token.Fence-skew.(int64) <= now {
		return nil
	}
	return c.refused(fmt.Errorf("%w: fence %d is more than %v ahead of the database's clock (%s)",
		ErrAhead, token.Fence, t.policy.maxSkew, t.table))
}

// fail ends the check of a statement the database failed; its error says
// nothing of the token, so it does not start with "fence:".
func (t *sqlTable) fail(c check, op string, err error) error {
	err = fmt.Errorf("%s %s: %w", op, t.table, err)
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

func (t *sqlTable) readMark(ctx context.Context, db DB, key any) (int64, bool, error) {
	var mark sql.NullInt64
	err := db.QueryRowContext(ctx, t.mark, key).Scan(&mark)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return mark.Int64, true, nil
}

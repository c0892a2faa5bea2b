package fence

import (
	"context"
	"strings"
)

// MySQLTable makes fenced writes to the rows of one MySQL or MariaDB table
// (InnoDB): each statement sets the row's columns and its mark to the
// write's token only where the row's mark is below the token, with the same
// results as PostgresTable.
//
// As in PostgresTable the check is part of the statement that writes. An
// UPDATE and an INSERT ... ON DUPLICATE KEY UPDATE are locking reads in
// InnoDB at every isolation level: they lock the row by its key, waiting
// for a transaction that holds it, and compare with the latest committed
// mark, not with the transaction's snapshot. So of two writes with one
// token exactly one matches, and no write lands on a row whose mark it has
// not compared with. There is no serialization failure to retry, but
// InnoDB may end a write that waits for a row lock with a deadlock error
// (1213), which the caller retries like one.
//
// The upsert has no WHERE clause: each assignment compares the token with
// the mark itself, IF(mark < token, new value, old value), so a stale
// upsert assigns every column its current value and changes nothing. MySQL
// evaluates the assignments of one statement left to right, each seeing the
// columns already assigned, so the mark is assigned last: every comparison
// reads the mark from before the write (and the result is the same under
// MariaDB's SIMULTANEOUS_ASSIGNMENT mode).
//
// Assumptions, beyond SQLConfig's:
//   - KeyColumn is the table's primary key and the table has no other
//     unique index: ON DUPLICATE KEY UPDATE acts on a conflict with any
//     unique index, and would then update the row that conflicts on it.
//   - The connection reports changed rows as affected rows, MySQL's default
//     (go-sql-driver/mysql: clientFoundRows=false, its default). An UPDATE
//     that matches changes the mark, so it counts either way; but the
//     upsert reports 1 for an insert, 2 for an update and 0 for a stale
//     write that changed nothing, which with clientFoundRows=true reports 1
//     like an insert: Upsert would then return nil for a stale write (that
//     wrote nothing). Do not set clientFoundRows on a handle you pass.
//
// After a write that matched no row, the mark is read with LOCK IN SHARE
// MODE, a locking read: in a REPEATABLE READ transaction a plain SELECT
// would read the transaction's snapshot, which can predate the mark the
// write compared with, and answer ErrNotFound for a stale write. In a
// transaction the shared lock is held until it ends.
//
// database/sql sends a statement once (see PostgresTable): go-sql-driver
// returns driver.ErrBadConn only when no byte of the statement was written.
//
// Every write with a valid token and the right number of values records a
// fence check (accepted or rejected); a database error or a missing row is
// traced on the fence.check span but not counted.
//
// A MySQLTable is safe for concurrent use.
type MySQLTable struct{ t sqlTable }

var _ Table = (*MySQLTable)(nil)

// mysql quotes with backticks; MySQL and MariaDB refuse names longer than
// 64 characters (bytes, for the ASCII names SQLConfig allows).
var mysql = &dialect{
	quote:         "`",
	maxIdentifier: 64,
	statements:    mysqlStatements,
	updateArgs: func(key any, token int64, values []any) []any {
		return append(append(make([]any, 0, len(values)+3), values...), token, key, token)
	},
	upsertArgs: func(key any, token int64, values []any) []any {
		args := append(append(make([]any, 0, 3*len(values)+4), key), values...)
		args = append(args, token)
		for _, v := range values {
			args = append(args, token, v)
		}
		return append(args, token, token)
	},
}

// NewMySQLTable validates cfg and builds the statements once.
// WithTelemetry applies; WithNamespace does not (it is for Redis keys).
func NewMySQLTable(cfg SQLConfig, opts ...Option) (*MySQLTable, error) {
	t, err := newSQLTable(mysql, cfg, opts)
	if err != nil {
		return nil, err
	}
	return &MySQLTable{t}, nil
}

func mysqlStatements(table, key, fence string, cols []string) (update, upsert, mark string) {
	// UPDATE t SET c1 = ?, ..., fence = ? WHERE key = ? AND fence < ?
	// (the WHERE clause is evaluated before any assignment)
	var u strings.Builder
	u.WriteString("UPDATE " + table + " SET ")
	for _, c := range cols {
		u.WriteString(c + " = ?, ")
	}
	u.WriteString(fence + " = ? WHERE " + key + " = ? AND " + fence + " < ?")

	// INSERT INTO t (key, c1, ..., fence) VALUES (?, ..., ?)
	// ON DUPLICATE KEY UPDATE c1 = IF(fence < ?, ?, c1), ..., fence = IF(fence < ?, ?, fence)
	// The token and values are parameters again rather than VALUES(c),
	// which MySQL 8.0.20 deprecated and whose replacement, a row alias,
	// MariaDB does not have.
	var p strings.Builder
	p.WriteString("INSERT INTO " + table + " (" + key)
	for _, c := range cols {
		p.WriteString(", " + c)
	}
	p.WriteString(", " + fence + ") VALUES (?")
	for range cols {
		p.WriteString(", ?")
	}
	p.WriteString(", ?) ON DUPLICATE KEY UPDATE ")
	for _, c := range cols {
		p.WriteString(c + " = IF(" + fence + " < ?, ?, " + c + "), ")
	}
	p.WriteString(fence + " = IF(" + fence + " < ?, ?, " + fence + ")")

	return u.String(), p.String(), "SELECT " + fence + " FROM " + table + " WHERE " + key + " = ? LOCK IN SHARE MODE"
}

// UpdateStatement returns the statement Update runs, with parameters the
// Columns' values, the token, the key and the token again:
//
//	UPDATE `t` SET `c1` = ?, ..., `fence` = ? WHERE `key` = ? AND `fence` < ?
//
// One row affected: written. None: stale, or no such row.
func (t *MySQLTable) UpdateStatement() string { return t.t.update }

// UpsertStatement returns the statement Upsert runs, with parameters the
// key, the Columns' values and the token, then the token and the value of
// each column, then the token twice:
//
//	INSERT INTO `t` (`key`, `c1`, ..., `fence`) VALUES (?, ?, ..., ?)
//	ON DUPLICATE KEY UPDATE `c1` = IF(`fence` < ?, ?, `c1`), ..., `fence` = IF(`fence` < ?, ?, `fence`)
//
// One row affected: inserted. Two: updated. None: stale.
func (t *MySQLTable) UpsertStatement() string { return t.t.upsert }

// Update is Table.Update, by UpdateStatement.
func (t *MySQLTable) Update(ctx context.Context, db DB, key any, token Token, values ...any) error {
	return t.t.write(ctx, db, key, token, values)
}

// Upsert is Table.Upsert, by UpsertStatement.
func (t *MySQLTable) Upsert(ctx context.Context, db DB, key any, token Token, values ...any) error {
	return t.t.put(ctx, db, key, token, values)
}

package fence

import "strings"

// NewMySQLTable returns a Table for the rows of one MySQL or MariaDB table
// (InnoDB), having validated cfg and built its statements once. Update runs
//
//	UPDATE `t` SET `c1` = ?, ..., `fence` = ? WHERE `key` = ? AND `fence` < ? AND <bound>
//
// and Upsert
//
//	INSERT INTO `t` (`key`, `c1`, ..., `fence`) SELECT ?, ?, ..., ? FROM DUAL WHERE <bound>
//	ON DUPLICATE KEY UPDATE `c1` = IF(`fence` < ?, ?, `c1`), ..., `fence` = IF(`fence` < ?, ?, `fence`)
//
// where <bound> is the clock bound of an unsigned token (TableConfig.MaxSkew):
// (? IS NULL OR token <= SYSDATE(6) in microseconds + ?). INSERT ... SELECT
// is logged as unsafe for statement-based replication; use row-based (the
// default since MySQL 5.7.7 and MariaDB 10.2.4).
//
// so the check is the UPDATE's WHERE clause, or is inside each assignment
// of the upsert, with the mark assigned last. Both are locking reads in
// InnoDB at every isolation level: they compare with the row's latest
// committed mark, so of two writes with one token exactly one matches. A
// write that waits for a row lock may get a deadlock error (1213), which
// the caller retries like a serialization failure.
//
// Two assumptions beyond TableConfig's:
//   - KeyColumn is the table's primary key and the table has no other
//     unique index: ON DUPLICATE KEY UPDATE acts on a conflict with any
//     unique index, and would then update the row that conflicts on it.
//   - The connection reports changed rows as affected rows, MySQL's default
//     (go-sql-driver/mysql without clientFoundRows). With clientFoundRows
//     a stale upsert reports 1, like an insert, and Upsert would return nil
//     for a write that wrote nothing.
//
// The Table is safe for concurrent use.
func NewMySQLTable(cfg TableConfig) (Table, error) {
	t, err := newSQLTable(mysql, cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// mysql is the dialect of MySQL and MariaDB. NewMySQLTable says what its
// statements guarantee; this says why.
//
// As for PostgreSQL the check is part of the statement that writes. An
// UPDATE and an INSERT ... ON DUPLICATE KEY UPDATE are locking reads in
// InnoDB at every isolation level: they lock the row by its key, waiting
// for a transaction that holds it, and compare with the latest committed
// mark, not with the transaction's snapshot. So no write lands on a row
// whose mark it has not compared with, and there is no serialization
// failure to retry.
//
// The upsert has no WHERE clause: each assignment compares the token with
// the mark itself, IF(mark < token, new value, old value), so a stale
// upsert assigns every column its current value and changes nothing. MySQL
// evaluates the assignments of one statement left to right, each seeing the
// columns already assigned, so the mark is assigned last: every comparison
// reads the mark from before the write (and the result is the same under
// MariaDB's SIMULTANEOUS_ASSIGNMENT mode). The upsert reports 1 affected
// row for an insert, 2 for an update and 0 for a stale write that changed
// nothing; an UPDATE that matches changes the mark, so it counts either
// way. Hence the clientFoundRows assumption, which only the upsert needs.
//
// After a write that matched no row, the mark is read with LOCK IN SHARE
// MODE, a locking read: in a REPEATABLE READ transaction a plain SELECT
// would read the transaction's snapshot, which can predate the mark the
// write compared with, and answer ErrNotFound for a stale write. In a
// transaction the shared lock is held until it ends.
//
// database/sql sends a statement once (see postgres): go-sql-driver returns
// driver.ErrBadConn only when no byte of the statement was written.
//
// Identifiers are in backticks; MySQL and MariaDB refuse names longer than
// 64 characters (bytes, for the ASCII names TableConfig allows).
var mysql = &dialect{
	quote:         "`",
	maxIdentifier: 64,
	statements:    mysqlStatements,
	updateArgs: func(key any, token int64, skew any, values []any) []any {
		return append(append(make([]any, 0, len(values)+6), values...), token, key, token, skew, token, skew)
	},
	upsertArgs: func(key any, token int64, skew any, values []any) []any {
		args := append(append(make([]any, 0, 3*len(values)+7), key), values...)
		args = append(args, token, skew, token, skew)
		for _, v := range values {
			args = append(args, token, v)
		}
		return append(args, token, token)
	},
	now: "SELECT " + mysqlNow,
}

// mysqlNow is the database's clock in microseconds since 1970, as fences
// are: SYSDATE(6) is the time of the call (NOW(6) the statement's start).
const mysqlNow = "CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED)"

// mysqlBound is the clock bound: its parameters are the skew (NULL for a
// signed token, which is not bounded), the token and the skew again.
const mysqlBound = "(? IS NULL OR ? <= " + mysqlNow + " + ?)"

func mysqlStatements(table, key, fence string, cols []string) (update, upsert, mark string) {
	// UPDATE t SET c1 = ?, ..., fence = ? WHERE key = ? AND fence < ?
	// (the WHERE clause is evaluated before any assignment)
	var u strings.Builder
	u.WriteString("UPDATE " + table + " SET ")
	for _, c := range cols {
		u.WriteString(c + " = ?, ")
	}
	u.WriteString(fence + " = ? WHERE " + key + " = ? AND " + fence + " < ? AND " + mysqlBound)

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
	p.WriteString(", " + fence + ") SELECT ?")
	for range cols {
		p.WriteString(", ?")
	}
	p.WriteString(", ? FROM DUAL WHERE " + mysqlBound + " ON DUPLICATE KEY UPDATE ")
	for _, c := range cols {
		p.WriteString(c + " = IF(" + fence + " < ?, ?, " + c + "), ")
	}
	p.WriteString(fence + " = IF(" + fence + " < ?, ?, " + fence + ")")

	return u.String(), p.String(), "SELECT " + fence + " FROM " + table + " WHERE " + key + " = ? LOCK IN SHARE MODE"
}

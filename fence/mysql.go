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
// where <bound> is the clock bound (SECURITY.md, "The clock bound, per
// store"). Both are locking reads in InnoDB at every isolation level, so of
// two writes with one token exactly one matches; one that waits for a row
// lock may get a deadlock error (1213), which the caller retries. INSERT ...
// SELECT needs row-based replication (the default since MySQL 5.7.7 and
// MariaDB 10.2.4). KeyColumn must be the table's only unique index (ON
// DUPLICATE KEY UPDATE acts on a conflict with any), and the connection must
// report changed rows, MySQL's default: with clientFoundRows a stale upsert
// would return nil. The Table is safe for concurrent use.
func NewMySQLTable(cfg TableConfig) (Table, error) {
	t, err := newSQLTable(mysql, cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// mysql is the dialect of MySQL and MariaDB. The upsert has no WHERE clause:
// each assignment compares, IF(mark < token, new value, old value), so a
// stale upsert changes nothing. MySQL assigns left to right, each assignment
// seeing those before it, so the mark goes last and every comparison reads
// the mark from before the write (MariaDB's SIMULTANEOUS_ASSIGNMENT mode
// gives the same result). It reports 1 affected row for an insert, 2 for an
// update and 0 for a stale write, hence the clientFoundRows assumption.
//
// A write that matched no row reads the mark with LOCK IN SHARE MODE: a
// plain SELECT in a REPEATABLE READ transaction would read its snapshot,
// which can predate the mark the write compared with, and answer ErrNotFound
// for a stale write; in a transaction the shared lock is held until it ends.
// go-sql-driver sends a statement once (see postgres).
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
	// The WHERE clause is evaluated before any assignment.
	var u strings.Builder
	u.WriteString("UPDATE " + table + " SET ")
	for _, c := range cols {
		u.WriteString(c + " = ?, ")
	}
	u.WriteString(fence + " = ? WHERE " + key + " = ? AND " + fence + " < ? AND " + mysqlBound)

	// The token and values are parameters again, not VALUES(c): MySQL
	// 8.0.20 deprecated it for a row alias, which MariaDB does not have.
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

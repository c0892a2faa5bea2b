package fence

import (
	"strconv"
	"strings"
)

// NewPostgresTable returns a Table for the rows of one PostgreSQL table,
// having validated cfg and built its statements once. Update runs
//
//	UPDATE "t" SET "c1" = $1, ..., "fence" = $n+1::bigint WHERE "key" = $n+2 AND "fence" < $n+1::bigint
//	AND <bound>
//
// and Upsert
//
//	INSERT INTO "t" AS "fenced" ("key", "c1", ..., "fence") SELECT $1, ..., $n+2::bigint WHERE <bound>
//	ON CONFLICT ("key") DO UPDATE SET "c1" = EXCLUDED."c1", ..., "fence" = EXCLUDED."fence"
//	WHERE "fenced"."fence" < EXCLUDED."fence"::bigint
//
// where <bound> is the clock bound of an unsigned token (TableConfig.MaxSkew):
// ($s::bigint IS NULL OR token <= clock_timestamp() in microseconds + $s),
// so the check is the WHERE clause of the statement that writes. Under READ
// COMMITTED, PostgreSQL re-evaluates it on the committed row it locks: of
// two writes with one token exactly one matches. Under REPEATABLE READ or
// SERIALIZABLE the later of two conflicting writes fails with a
// serialization failure instead, which the caller retries as usual. The
// token is cast to bigint, so a FenceColumn of another type fails the
// statements rather than compare wrongly. For Upsert, KeyColumn needs a
// unique constraint (ON CONFLICT).
//
// The Table is safe for concurrent use.
func NewPostgresTable(cfg TableConfig) (Table, error) {
	t, err := newSQLTable(postgres, cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// postgres is PostgreSQL's dialect. NewPostgresTable says what its
// statements guarantee; this says why.
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
// version, so no write lands on a row whose mark it has not compared with.
// INSERT ... ON CONFLICT DO UPDATE ... WHERE locks the conflicting row and
// evaluates its WHERE clause the same way.
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
// Identifiers are in double quotes; PostgreSQL silently truncates names
// longer than NAMEDATALEN-1 bytes, which could make two configured names
// one.
var postgres = &dialect{
	quote:         `"`,
	maxIdentifier: 63,
	statements:    postgresStatements,
	updateArgs: func(key any, token int64, skew any, values []any) []any {
		return append(append(make([]any, 0, len(values)+3), values...), token, key, skew)
	},
	upsertArgs: func(key any, token int64, skew any, values []any) []any {
		return append(append(append(make([]any, 0, len(values)+3), key), values...), token, skew)
	},
	now: "SELECT " + postgresNow,
}

// postgresNow is the database's clock in microseconds since 1970, as
// fences are: clock_timestamp() is the time of the call (now() would be the
// transaction's start, which may be long ago).
const postgresNow = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

// postgresBound is the clock bound on token (a parameter) with the skew in
// parameter s: NULL for a signed token, which is not bounded.
func postgresBound(token, s string) string {
	return "(" + s + "::bigint IS NULL OR " + token + " <= " + postgresNow + " + " + s + "::bigint)"
}

func postgresStatements(table, key, fence string, cols []string) (update, upsert, mark string) {
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
	u.WriteString(" AND " + postgresBound(token(n+1), param(n+3)))

	// INSERT INTO t AS fenced (key, c1, ..., fence) SELECT $1, ..., $n+2 WHERE bound
	// ON CONFLICT (key) DO UPDATE SET c1 = EXCLUDED.c1, ..., fence = EXCLUDED.fence
	// WHERE fenced.fence < EXCLUDED.fence
	// The alias names the existing row whatever the table is called (even
	// "excluded", or schema-qualified). SELECT ... WHERE rather than
	// VALUES, so that the bound also stops the insert of a new row; the
	// parameters take the types of the columns they are inserted into.
	var p strings.Builder
	p.WriteString("INSERT INTO " + table + ` AS "fenced" (` + key)
	for _, c := range cols {
		p.WriteString(", " + c)
	}
	p.WriteString(", " + fence + ") SELECT ")
	for i := 1; i <= n+1; i++ {
		p.WriteString(param(i) + ", ")
	}
	p.WriteString(token(n + 2))
	p.WriteString(" WHERE " + postgresBound(token(n+2), param(n+3)))
	p.WriteString(" ON CONFLICT (" + key + ") DO UPDATE SET ")
	for _, c := range cols {
		p.WriteString(c + " = EXCLUDED." + c + ", ")
	}
	p.WriteString(fence + " = EXCLUDED." + fence + ` WHERE "fenced".` + fence + " < EXCLUDED." + fence + "::bigint")

	return u.String(), p.String(), "SELECT " + fence + " FROM " + table + " WHERE " + key + " = $1"
}

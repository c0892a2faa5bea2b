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
// where <bound> is the clock bound (SECURITY.md, "The clock bound, per
// store"). Under READ COMMITTED PostgreSQL re-evaluates the WHERE clause on
// the committed row it locks, so of two writes with one token exactly one
// matches; under REPEATABLE READ or SERIALIZABLE the later fails with a
// serialization failure, which the caller retries. The token is cast to
// bigint, so a FenceColumn of another type (text: "99" > "100") fails the
// statements rather than compare wrongly. Upsert needs a unique constraint
// on KeyColumn. The Table is safe for concurrent use.
func NewPostgresTable(cfg TableConfig) (Table, error) {
	t, err := newSQLTable(postgres, cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// postgres is PostgreSQL's dialect. An upsert's ON CONFLICT ... WHERE locks
// the conflicting row and evaluates its WHERE clause as an UPDATE does.
//
// database/sql, unlike go-redis (RedisStore.Write), sends a statement once:
// it repeats one only on driver.ErrBadConn, which pgx's stdlib driver
// returns only when no byte was sent. A write repeated after an error (a
// lost reply to COMMIT) is a new write, stale if the first took effect.
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

// postgresNow is the database's clock in microseconds since 1970, as fences
// are: clock_timestamp() is the time of the call (now() would be the
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
	// Whatever the driver sends the token as, it compares as a bigint.
	token := func(i int) string { return param(i) + "::bigint" }

	var u strings.Builder
	u.WriteString("UPDATE " + table + " SET ")
	for i, c := range cols {
		u.WriteString(c + " = " + param(i+1) + ", ")
	}
	u.WriteString(fence + " = " + token(n+1) + " WHERE " + key + " = " + param(n+2) + " AND " + fence + " < " + token(n+1))
	u.WriteString(" AND " + postgresBound(token(n+1), param(n+3)))

	// The alias names the existing row whatever the table is called (even
	// "excluded"). SELECT ... WHERE, not VALUES, so that the bound also
	// stops an insert; the parameters take the inserted columns' types.
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

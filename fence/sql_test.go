package fence_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/pgtest"
	"github.com/lockwatch/lockwatch/telemetry"
)

// docsTable creates a table in the test's own schema and a fenced view of it.
func docsTable(t *testing.T, db *sql.DB, h harness) *fence.SQLTable {
	t.Helper()
	_, err := db.ExecContext(testCtx(t), `CREATE TABLE docs (
		id    text PRIMARY KEY,
		title text NOT NULL,
		body  text,
		fence bigint NOT NULL)`)
	require.NoError(t, err)
	tbl, err := fence.NewSQLTable(fence.SQLConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence",
		Columns: []string{"title", "body"}}, fence.WithTelemetry(h.Tel))
	require.NoError(t, err)
	return tbl
}

type doc struct {
	title string
	body  sql.NullString
	fence int64
}

func readDoc(t *testing.T, db fence.DB, id string) doc {
	t.Helper()
	var d doc
	require.NoError(t, db.QueryRowContext(testCtx(t), "SELECT title, body, fence FROM docs WHERE id = $1", id).
		Scan(&d.title, &d.body, &d.fence))
	return d
}

func TestSQLUpdate(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	db := pgtest.Open(t)
	tbl := docsTable(t, db, h)
	_, err := db.ExecContext(ctx, "INSERT INTO docs VALUES ('a', 'draft', NULL, 0)")
	require.NoError(t, err)

	require.NoError(t, tbl.Update(ctx, db, "a", 10, "v10", "body"))
	assert.Equal(t, doc{"v10", sql.NullString{String: "body", Valid: true}, 10}, readDoc(t, db, "a"), "columns and mark in one statement")
	stale(t, tbl.Update(ctx, db, "a", 10, "again", nil), 10, 10)
	stale(t, tbl.Update(ctx, db, "a", 9, "older", nil), 9, 10)
	assert.Equal(t, "v10", readDoc(t, db, "a").title, "rejected updates change nothing")
	require.NoError(t, tbl.Update(ctx, db, "a", 1<<63-1, "last", nil), "the whole int64 range")
	assert.Equal(t, doc{"last", sql.NullString{}, 1<<63 - 1}, readDoc(t, db, "a"))

	err = tbl.Update(ctx, db, "missing", 5, "x", nil)
	require.ErrorIs(t, err, fence.ErrNotFound)
	assert.NotErrorIs(t, err, fence.ErrStale)

	var se *fence.StaleError
	require.ErrorAs(t, tbl.Update(ctx, db, "a", 3, "x", nil), &se)
	assert.Equal(t, "docs", se.Resource, "Resource defaults to Table")

	assert.Equal(t, counts{accepted: 2, rejected: 3, rejections: 3}, h.counts(t, "docs"), "a missing row is not a check")
	var missing bool
	for _, sp := range h.checkSpans() {
		if containsAttr(sp.Attributes(), attribute.String(telemetry.AttrResult, "not_found")) {
			missing = true
			assert.Equal(t, codes.Unset, sp.Status().Code)
		}
	}
	assert.True(t, missing, "the span says the row was missing")
}

func containsAttr(kvs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, kv := range kvs {
		if kv == want {
			return true
		}
	}
	return false
}

func TestSQLUpsert(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	db := pgtest.Open(t)
	tbl := docsTable(t, db, h)

	require.NoError(t, tbl.Upsert(ctx, db, "b", 7, "created", "x"), "inserts a missing row")
	assert.Equal(t, doc{"created", sql.NullString{String: "x", Valid: true}, 7}, readDoc(t, db, "b"))
	stale(t, tbl.Upsert(ctx, db, "b", 7, "replayed", "y"), 7, 7)
	stale(t, tbl.Upsert(ctx, db, "b", 6, "older", "y"), 6, 7)
	assert.Equal(t, "created", readDoc(t, db, "b").title)
	require.NoError(t, tbl.Upsert(ctx, db, "b", 8, "updated", nil), "updates an existing row")
	assert.Equal(t, doc{"updated", sql.NullString{}, 8}, readDoc(t, db, "b"))
	assert.Equal(t, counts{accepted: 2, rejected: 2, rejections: 2}, h.counts(t, "docs"))

	// Inside a transaction that rolls back, the mark goes back too.
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tbl.Upsert(ctx, tx, "b", 9, "in tx", nil))
	require.NoError(t, tbl.Update(ctx, tx, "b", 10, "in tx", nil))
	assert.EqualValues(t, 10, readDoc(t, tx, "b").fence)
	require.NoError(t, tx.Rollback())
	assert.EqualValues(t, 8, readDoc(t, db, "b").fence)
}

// TestSQLExotic: quoting makes reserved words and a schema-qualified table
// named "excluded" work, which an unquoted, unaliased upsert would not.
func TestSQLExotic(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.Open(t)
	var schema string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema))
	_, err := db.ExecContext(ctx, `CREATE TABLE excluded ("user" int PRIMARY KEY, "order" text, "Select" bigint NOT NULL)`)
	require.NoError(t, err)
	tbl, err := fence.NewSQLTable(fence.SQLConfig{Table: schema + ".excluded", KeyColumn: "user", FenceColumn: "Select",
		Columns: []string{"order"}, Resource: "orders"}, fence.WithTelemetry(newHarness(t).Tel))
	require.NoError(t, err)
	require.NoError(t, tbl.Upsert(ctx, db, 1, 5, "first"))
	require.NoError(t, tbl.Upsert(ctx, db, 1, 6, "second"))
	stale(t, tbl.Upsert(ctx, db, 1, 6, "again"), 6, 6)
	require.NoError(t, tbl.Update(ctx, db, 1, 7, "third"))
	var order string
	var mark int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT "order", "Select" FROM excluded`).Scan(&order, &mark))
	assert.Equal(t, "third", order)
	assert.EqualValues(t, 7, mark)

	// No Columns: the statements only advance the mark.
	only, err := fence.NewSQLTable(fence.SQLConfig{Table: "excluded", KeyColumn: "user", FenceColumn: "Select"},
		fence.WithTelemetry(newHarness(t).Tel))
	require.NoError(t, err)
	require.NoError(t, only.Update(ctx, db, 1, 8))
	stale(t, only.Upsert(ctx, db, 1, 8), 8, 8)
	require.NoError(t, only.Upsert(ctx, db, 2, 1))
}

func TestSQLArgumentErrors(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	tbl, err := fence.NewSQLTable(fence.SQLConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence",
		Columns: []string{"title", "body"}}, fence.WithTelemetry(h.Tel))
	require.NoError(t, err)
	var db fence.DB // never reached: the errors come first
	assert.ErrorContains(t, tbl.Update(ctx, db, "a", 1, "one"), "1 values for 2 columns")
	assert.ErrorContains(t, tbl.Upsert(ctx, db, "a", 1, "one", "two", "three"), "3 values for 2 columns")
	assert.ErrorIs(t, tbl.Update(ctx, db, "a", 0, "t", "b"), fence.ErrMalformed)
	assert.ErrorIs(t, tbl.Upsert(ctx, db, "a", -5, "t", "b"), fence.ErrMalformed)
	assert.Equal(t, counts{}, h.counts(t, "docs"))
	assert.Empty(t, h.checkSpans())
}

// TestSQLDatabaseError: a failing statement is the database's error,
// wrapped, not a rejection, not counted.
func TestSQLDatabaseError(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	db := pgtest.Open(t)
	tbl, err := fence.NewSQLTable(fence.SQLConfig{Table: "nowhere", KeyColumn: "id", FenceColumn: "fence"}, fence.WithTelemetry(h.Tel))
	require.NoError(t, err)
	for _, err := range []error{tbl.Update(ctx, db, "a", 1), tbl.Upsert(ctx, db, "a", 1)} {
		require.Error(t, err)
		assert.NotErrorIs(t, err, fence.ErrStale)
		assert.NotErrorIs(t, err, fence.ErrNotFound)
		assert.ErrorContains(t, err, `relation "nowhere" does not exist`)
	}
	assert.Equal(t, counts{}, h.counts(t, "nowhere"))
	spans := h.checkSpans()
	require.Len(t, spans, 2)
	for _, sp := range spans {
		assert.Equal(t, codes.Error, sp.Status().Code)
	}
}

func TestSQLConfigValidation(t *testing.T) {
	good := fence.SQLConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence", Columns: []string{"title"}}
	_, err := fence.NewSQLTable(good)
	require.NoError(t, err)
	for name, mutate := range map[string]func(*fence.SQLConfig){
		"empty table":          func(c *fence.SQLConfig) { c.Table = "" },
		"injection":            func(c *fence.SQLConfig) { c.Table = "docs; DROP TABLE docs" },
		"quote":                func(c *fence.SQLConfig) { c.Table = `do"cs` },
		"leading digit":        func(c *fence.SQLConfig) { c.Table = "1docs" },
		"three parts":          func(c *fence.SQLConfig) { c.Table = "db.public.docs" },
		"empty schema":         func(c *fence.SQLConfig) { c.Table = ".docs" },
		"empty table part":     func(c *fence.SQLConfig) { c.Table = "public." },
		"too long":             func(c *fence.SQLConfig) { c.Table = string(make([]byte, 64)) },
		"long identifier":      func(c *fence.SQLConfig) { c.KeyColumn = strings.Repeat("x", 64) },
		"non-ASCII":            func(c *fence.SQLConfig) { c.KeyColumn = "clé" },
		"empty key":            func(c *fence.SQLConfig) { c.KeyColumn = "" },
		"empty fence":          func(c *fence.SQLConfig) { c.FenceColumn = "" },
		"fence is key":         func(c *fence.SQLConfig) { c.FenceColumn = "id" },
		"space":                func(c *fence.SQLConfig) { c.FenceColumn = "last fence" },
		"column repeats":       func(c *fence.SQLConfig) { c.Columns = []string{"title", "title"} },
		"column is key":        func(c *fence.SQLConfig) { c.Columns = []string{"id"} },
		"column is fence":      func(c *fence.SQLConfig) { c.Columns = []string{"fence"} },
		"qualified column":     func(c *fence.SQLConfig) { c.Columns = []string{"docs.title"} },
		"empty column":         func(c *fence.SQLConfig) { c.Columns = []string{""} },
		"parenthesised column": func(c *fence.SQLConfig) { c.Columns = []string{"title)"} },
	} {
		cfg := good
		mutate(&cfg)
		tbl, err := fence.NewSQLTable(cfg)
		assert.Error(t, err, name)
		assert.Nil(t, tbl, name)
		if err != nil {
			assert.Contains(t, err.Error(), "fence: SQLConfig", name)
		}
	}
	for _, table := range []string{"_t", "T9", "public.docs", "Public_2.Docs_3", strings.Repeat("a", 63)} {
		cfg := good
		cfg.Table = table
		_, err := fence.NewSQLTable(cfg)
		assert.NoError(t, err, table)
	}
}

func TestSQLStatements(t *testing.T) {
	tbl, err := fence.NewSQLTable(fence.SQLConfig{Table: "app.docs", KeyColumn: "id", FenceColumn: "last_fence",
		Columns: []string{"title", "body"}})
	require.NoError(t, err)
	assert.Equal(t, `UPDATE "app"."docs" SET "title" = $1, "body" = $2, "last_fence" = $3::bigint WHERE "id" = $4 AND "last_fence" < $3::bigint`,
		tbl.UpdateStatement())
	assert.Equal(t, `INSERT INTO "app"."docs" AS "fenced" ("id", "title", "body", "last_fence") VALUES ($1, $2, $3, $4::bigint) `+
		`ON CONFLICT ("id") DO UPDATE SET "title" = EXCLUDED."title", "body" = EXCLUDED."body", "last_fence" = EXCLUDED."last_fence" `+
		`WHERE "fenced"."last_fence" < EXCLUDED."last_fence"::bigint`,
		tbl.UpsertStatement())
}

// TestSQLConcurrent: 16 writers, Update and Upsert mixed, on one row.
func TestSQLConcurrent(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	db := pgtest.Open(t)
	db.SetMaxOpenConns(writers)
	tbl := docsTable(t, db, h)
	_, err := db.ExecContext(ctx, "INSERT INTO docs VALUES ('one-row', '', NULL, 0)")
	require.NoError(t, err)

	all := hammer(t, func(ctx context.Context, w int, tok fence.Token) error {
		if w%2 == 0 {
			return tbl.Update(ctx, db, "one-row", tok, tok.String(), nil)
		}
		return tbl.Upsert(ctx, db, "one-row", tok, tok.String(), nil)
	})
	accepted, rejected, top := verify(t, all)
	assert.Positive(t, rejected, "tokens repeat, so some writes must be refused")

	d := readDoc(t, db, "one-row")
	assert.EqualValues(t, top, d.fence, "the stored mark is the largest accepted token")
	assert.Equal(t, top.String(), d.title, "and the row is that write's")
	assert.Equal(t, counts{accepted: accepted, rejected: rejected, rejections: rejected}, h.counts(t, "docs"))
}

// TestSQLTextFenceColumnFails: a fence column of the wrong type (text
// compares "99" above "100") makes both statements fail, never fence wrongly.
func TestSQLTextFenceColumnFails(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE docs (id int PRIMARY KEY, body text, last_fence text NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO docs VALUES (1, 'x', '100')`)
	require.NoError(t, err)
	tbl, err := fence.NewSQLTable(fence.SQLConfig{Table: "docs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"body"}})
	require.NoError(t, err)
	err = tbl.Update(ctx, db, 1, 99, "stale")
	require.Error(t, err)
	assert.NotErrorIs(t, err, fence.ErrStale)
	err = tbl.Upsert(ctx, db, 1, 99, "stale")
	require.Error(t, err)
	assert.NotErrorIs(t, err, fence.ErrStale)
	var body string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT body FROM docs WHERE id = 1`).Scan(&body))
	assert.Equal(t, "x", body)
}

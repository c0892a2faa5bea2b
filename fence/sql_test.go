package fence_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/mysqltest"
	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
)

// sqlBackend is one database the fenced-table suite runs on: the same
// tests, through fence.Table, against NewPostgresTable and NewMySQLTable.
type sqlBackend struct {
	name string
	// open returns a handle on a database (or schema) of the test's own.
	open     func(testing.TB) *sql.DB
	newTable func(fence.TableConfig) (fence.Table, error)
	// param is the placeholder of the tests' own queries.
	param string
	// quote is the identifier quote of the tests' own DDL.
	quote string
	// textKey is a key column type both a text key and a PRIMARY KEY suit.
	textKey string
	// maxIdentifier is the longest identifier the database keeps intact.
	maxIdentifier int
	// qualifier is the query of the name that qualifies a table
	// (schema.table, database.table).
	qualifier string
	// missingTable is what the database says of a table that is not there.
	missingTable string
}

var sqlBackends = []sqlBackend{
	{
		name:     "postgres",
		open:     pgtest.Open,
		newTable: fence.NewPostgresTable,
		param:    "$1", quote: `"`, textKey: "text", maxIdentifier: 63,
		qualifier:    "SELECT current_schema()",
		missingTable: `relation "nowhere" does not exist`,
	},
	{
		name:     "mysql",
		open:     mysqltest.Open,
		newTable: fence.NewMySQLTable,
		param:    "?", quote: "`", textKey: "varchar(64)", maxIdentifier: 64,
		qualifier:    "SELECT DATABASE()",
		missingTable: "nowhere' doesn't exist",
	},
}

// eachBackend runs test once per database, as a subtest named after it.
func eachBackend(t *testing.T, test func(t *testing.T, b sqlBackend)) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// sql rewrites a statement of the tests written with PostgreSQL's quotes
// and a $1 placeholder for the backend.
func (b sqlBackend) sql(stmt string) string {
	return strings.NewReplacer(`"`, b.quote, "$1", b.param).Replace(stmt)
}

// docsTable creates a table in the test's own schema or database and a
// fenced view of it.
func (b sqlBackend) docsTable(t *testing.T, db *sql.DB, h harness) fence.Table {
	t.Helper()
	_, err := db.ExecContext(testCtx(t), `CREATE TABLE docs (
		id    `+b.textKey+` PRIMARY KEY,
		title text NOT NULL,
		body  text,
		fence bigint NOT NULL)`)
	require.NoError(t, err)
	tbl, err := b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence",
		Columns: []string{"title", "body"}, Telemetry: h.Tel})
	require.NoError(t, err)
	return tbl
}

// signedDocsTable is a second Table on docsTable's table, with the secrets
// of signing: for the writes whose fences are beyond any clock.
func (b sqlBackend) signedDocsTable(t *testing.T, h harness) fence.Table {
	t.Helper()
	tbl, err := b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence",
		Columns: []string{"title", "body"}, Secrets: signing, Telemetry: h.Tel})
	require.NoError(t, err)
	return tbl
}

type doc struct {
	title string
	body  sql.NullString
	fence int64
}

func (b sqlBackend) readDoc(t *testing.T, db fence.DB, id string) doc {
	t.Helper()
	var d doc
	require.NoError(t, db.QueryRowContext(testCtx(t), b.sql("SELECT title, body, fence FROM docs WHERE id = $1"), id).
		Scan(&d.title, &d.body, &d.fence))
	return d
}

func TestTableUpdate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		ctx := testCtx(t)
		h := newHarness(t)
		db := b.open(t)
		tbl := b.docsTable(t, db, h)
		_, err := db.ExecContext(ctx, "INSERT INTO docs VALUES ('a', 'draft', NULL, 0)")
		require.NoError(t, err)

		require.NoError(t, tbl.Update(ctx, db, "a", tk("a", 10), "v10", "body"))
		assert.Equal(t, doc{"v10", sql.NullString{String: "body", Valid: true}, 10}, b.readDoc(t, db, "a"), "columns and mark in one statement")
		stale(t, tbl.Update(ctx, db, "a", tk("a", 10), "again", nil), 10, 10)
		stale(t, tbl.Update(ctx, db, "a", tk("a", 9), "older", nil), 9, 10)
		assert.Equal(t, "v10", b.readDoc(t, db, "a").title, "rejected updates change nothing")
		require.NoError(t, tbl.Update(ctx, db, "a", tk("a", 11), "v10", "body"), "new values equal to the old ones: the mark still moves")
		require.NoError(t, b.signedDocsTable(t, h).Update(ctx, db, "a", signed("a", 1<<63-1), "last", nil), "the whole int64 range (signed, so not held to a clock)")
		assert.Equal(t, doc{"last", sql.NullString{}, 1<<63 - 1}, b.readDoc(t, db, "a"))

		err = tbl.Update(ctx, db, "missing", tk("missing", 5), "x", nil)
		require.ErrorIs(t, err, fence.ErrNotFound)
		require.NotErrorIs(t, err, fence.ErrStale)

		var se *fence.StaleError
		require.ErrorAs(t, tbl.Update(ctx, db, "a", tk("a", 3), "x", nil), &se)
		assert.Equal(t, "docs", se.Resource, "Resource defaults to Table")

		assert.Equal(t, counts{accepted: 3, rejected: 3, rejections: 3}, h.counts(t, "docs"), "a missing row is not a check")
		var missing bool
		for _, sp := range h.checkSpans() {
			if containsAttr(sp.Attributes(), attribute.String(obs.AttrResult, "not_found")) {
				missing = true
				assert.Equal(t, codes.Unset, sp.Status().Code)
			}
		}
		assert.True(t, missing, "the span says the row was missing")
	})
}

func containsAttr(kvs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, kv := range kvs {
		if kv == want {
			return true
		}
	}
	return false
}

func TestTableUpsert(t *testing.T) {
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		ctx := testCtx(t)
		h := newHarness(t)
		db := b.open(t)
		tbl := b.docsTable(t, db, h)

		require.NoError(t, tbl.Upsert(ctx, db, "b", tk("b", 7), "created", "x"), "inserts a missing row")
		assert.Equal(t, doc{"created", sql.NullString{String: "x", Valid: true}, 7}, b.readDoc(t, db, "b"))
		stale(t, tbl.Upsert(ctx, db, "b", tk("b", 7), "replayed", "y"), 7, 7)
		stale(t, tbl.Upsert(ctx, db, "b", tk("b", 6), "older", "y"), 6, 7)
		assert.Equal(t, doc{"created", sql.NullString{String: "x", Valid: true}, 7}, b.readDoc(t, db, "b"), "a stale upsert changes no column")
		require.NoError(t, tbl.Upsert(ctx, db, "b", tk("b", 8), "updated", nil), "updates an existing row")
		assert.Equal(t, doc{"updated", sql.NullString{}, 8}, b.readDoc(t, db, "b"))
		assert.Equal(t, counts{accepted: 2, rejected: 2, rejections: 2}, h.counts(t, "docs"))

		// Inside a transaction that rolls back, the mark goes back too.
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, tbl.Upsert(ctx, tx, "b", tk("b", 9), "in tx", nil))
		require.NoError(t, tbl.Update(ctx, tx, "b", tk("b", 10), "in tx", nil))
		assert.EqualValues(t, 10, b.readDoc(t, tx, "b").fence)
		require.NoError(t, tx.Rollback())
		assert.EqualValues(t, 8, b.readDoc(t, db, "b").fence)
	})
}

// TestTableRace: 41 and 42 sent at once, many times over, by Update to a
// row that exists and by Upsert to one that does not: 42 is always
// accepted, 41 only if it came first, and every row ends with 42.
func TestTableRace(t *testing.T) {
	const rounds = 20
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		ctx := testCtx(t)
		db := b.open(t)
		db.SetMaxOpenConns(2)
		tbl := b.docsTable(t, db, newHarness(t))
		for _, upsert := range []bool{false, true} {
			for i := range rounds {
				id := "update-" + strconv.Itoa(i)
				write := tbl.Update
				if upsert {
					id, write = "upsert-"+strconv.Itoa(i), tbl.Upsert
				} else {
					_, err := db.ExecContext(ctx, b.sql("INSERT INTO docs VALUES ($1, '', NULL, 0)"), id)
					require.NoError(t, err)
				}
				errs := make([]error, 2)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for j, n := range []int64{41, 42} {
					wg.Go(func() {
						<-start
						errs[j] = write(ctx, db, id, tk(id, n), strconv.FormatInt(n, 10), nil)
					})
				}
				close(start)
				wg.Wait()
				require.NoError(t, errs[1], "%s: 42 is the newest token", id)
				if errs[0] != nil {
					stale(t, errs[0], 41, 42)
				}
				assert.Equal(t, doc{"42", sql.NullString{}, 42}, b.readDoc(t, db, id), id)
			}
		}
	})
}

// TestTableConcurrent: 16 writers, Update and Upsert mixed, on one row.
func TestTableConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		ctx := testCtx(t)
		h := newHarness(t)
		db := b.open(t)
		db.SetMaxOpenConns(writers)
		tbl := b.docsTable(t, db, h)
		_, err := db.ExecContext(ctx, "INSERT INTO docs VALUES ('one-row', '', NULL, 0)")
		require.NoError(t, err)

		all := hammer(t, func(ctx context.Context, w int, n int64) error {
			if w%2 == 0 {
				return tbl.Update(ctx, db, "one-row", tk("one-row", n), strconv.FormatInt(n, 10), nil)
			}
			return tbl.Upsert(ctx, db, "one-row", tk("one-row", n), strconv.FormatInt(n, 10), nil)
		})
		accepted, rejected, top := verify(t, all)
		assert.Positive(t, rejected, "tokens repeat, so some writes must be refused")

		d := b.readDoc(t, db, "one-row")
		assert.Equal(t, top, d.fence, "the stored mark is the largest accepted token")
		assert.Equal(t, strconv.FormatInt(top, 10), d.title, "and the row is that write's")
		assert.Equal(t, counts{accepted: accepted, rejected: rejected, rejections: rejected}, h.counts(t, "docs"))
	})
}

// TestTableExotic: quoting makes reserved words and a qualified table named
// "excluded" work, which an unquoted, unaliased upsert would not.
func TestTableExotic(t *testing.T) {
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		ctx := testCtx(t)
		db := b.open(t)
		var qualifier string
		require.NoError(t, db.QueryRowContext(ctx, b.qualifier).Scan(&qualifier))
		_, err := db.ExecContext(ctx, b.sql(`CREATE TABLE excluded ("user" int PRIMARY KEY, "order" text, "Select" bigint NOT NULL)`))
		require.NoError(t, err)
		tbl, err := b.newTable(fence.TableConfig{Table: qualifier + ".excluded", KeyColumn: "user", FenceColumn: "Select",
			Columns: []string{"order"}, Resource: "orders", Telemetry: newHarness(t).Tel})
		require.NoError(t, err)
		require.NoError(t, tbl.Upsert(ctx, db, 1, tk(1, 5), "first"))
		require.NoError(t, tbl.Upsert(ctx, db, 1, tk(1, 6), "second"))
		stale(t, tbl.Upsert(ctx, db, 1, tk(1, 6), "again"), 6, 6)
		require.NoError(t, tbl.Update(ctx, db, 1, tk(1, 7), "third"))
		var order string
		var mark int64
		require.NoError(t, db.QueryRowContext(ctx, b.sql(`SELECT "order", "Select" FROM excluded`)).Scan(&order, &mark))
		assert.Equal(t, "third", order)
		assert.EqualValues(t, 7, mark)

		// No Columns: the statements only advance the mark.
		only, err := b.newTable(fence.TableConfig{Table: "excluded", KeyColumn: "user", FenceColumn: "Select",
			Telemetry: newHarness(t).Tel})
		require.NoError(t, err)
		require.NoError(t, only.Update(ctx, db, 1, tk(1, 8)))
		stale(t, only.Upsert(ctx, db, 1, tk(1, 8)), 8, 8)
		require.NoError(t, only.Upsert(ctx, db, 2, tk(2, 1)))
	})
}

func TestTableArgumentErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		ctx := testCtx(t)
		h := newHarness(t)
		tbl, err := b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence",
			Columns: []string{"title", "body"}, Telemetry: h.Tel})
		require.NoError(t, err)
		var db fence.DB // never reached: the errors come first
		require.ErrorContains(t, tbl.Update(ctx, db, "a", tk("a", 1), "one"), "1 values for 2 columns")
		require.ErrorContains(t, tbl.Upsert(ctx, db, "a", tk("a", 1), "one", "two", "three"), "3 values for 2 columns")
		require.ErrorIs(t, tbl.Update(ctx, db, "a", tk("a", 0), "t", "b"), fence.ErrMalformed)
		require.ErrorIs(t, tbl.Upsert(ctx, db, "a", tk("a", -5), "t", "b"), fence.ErrMalformed)
		assert.Equal(t, counts{}, h.counts(t, "docs"))
		assert.Empty(t, h.checkSpans())
	})
}

// TestTableDatabaseError: a failing statement is the database's error,
// wrapped with the operation and table but not as the fence's ("fence:"
// marks the fence's own errors), not a rejection, not counted; and so is
// a statement cancelled by its context.
func TestTableDatabaseError(t *testing.T) {
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		ctx := testCtx(t)
		h := newHarness(t)
		db := b.open(t)
		tbl, err := b.newTable(fence.TableConfig{Table: "nowhere", KeyColumn: "id", FenceColumn: "fence", Telemetry: h.Tel})
		require.NoError(t, err)
		for op, err := range map[string]error{"update": tbl.Update(ctx, db, "a", tk("a", 1)), "upsert": tbl.Upsert(ctx, db, "a", tk("a", 1))} {
			require.Error(t, err)
			require.NotErrorIs(t, err, fence.ErrStale)
			require.NotErrorIs(t, err, fence.ErrNotFound)
			require.ErrorContains(t, err, b.missingTable)
			assert.True(t, strings.HasPrefix(err.Error(), op+" nowhere: "), "the database's error, not the fence's: %v", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		err = tbl.Update(cancelled, db, "a", tk("a", 1))
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, "update nowhere: context canceled", err.Error())
		assert.Equal(t, counts{}, h.counts(t, "nowhere"))
		spans := h.checkSpans()
		require.Len(t, spans, 3)
		for _, sp := range spans {
			assert.Equal(t, codes.Error, sp.Status().Code)
		}
	})
}

func TestTableConfigValidation(t *testing.T) {
	eachBackend(t, func(t *testing.T, b sqlBackend) {
		good := fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence", Columns: []string{"title"}}
		_, err := b.newTable(good)
		require.NoError(t, err)
		for name, mutate := range map[string]func(*fence.TableConfig){
			"empty table":          func(c *fence.TableConfig) { c.Table = "" },
			"injection":            func(c *fence.TableConfig) { c.Table = "docs; DROP TABLE docs" },
			"quote":                func(c *fence.TableConfig) { c.Table = `do"cs` },
			"backtick":             func(c *fence.TableConfig) { c.Table = "do`cs" },
			"leading digit":        func(c *fence.TableConfig) { c.Table = "1docs" },
			"three parts":          func(c *fence.TableConfig) { c.Table = "db.public.docs" },
			"empty schema":         func(c *fence.TableConfig) { c.Table = ".docs" },
			"empty table part":     func(c *fence.TableConfig) { c.Table = "public." },
			"too long":             func(c *fence.TableConfig) { c.Table = strings.Repeat("t", b.maxIdentifier+1) },
			"long identifier":      func(c *fence.TableConfig) { c.KeyColumn = strings.Repeat("x", b.maxIdentifier+1) },
			"non-ASCII":            func(c *fence.TableConfig) { c.KeyColumn = "clé" },
			"empty key":            func(c *fence.TableConfig) { c.KeyColumn = "" },
			"empty fence":          func(c *fence.TableConfig) { c.FenceColumn = "" },
			"fence is key":         func(c *fence.TableConfig) { c.FenceColumn = "id" },
			"space":                func(c *fence.TableConfig) { c.FenceColumn = "last fence" },
			"column repeats":       func(c *fence.TableConfig) { c.Columns = []string{"title", "title"} },
			"column is key":        func(c *fence.TableConfig) { c.Columns = []string{"id"} },
			"column is fence":      func(c *fence.TableConfig) { c.Columns = []string{"fence"} },
			"qualified column":     func(c *fence.TableConfig) { c.Columns = []string{"docs.title"} },
			"empty column":         func(c *fence.TableConfig) { c.Columns = []string{""} },
			"parenthesised column": func(c *fence.TableConfig) { c.Columns = []string{"title)"} },
		} {
			cfg := good
			mutate(&cfg)
			tbl, err := b.newTable(cfg)
			require.Error(t, err, name)
			assert.Nil(t, tbl, name)
			if err != nil {
				assert.Contains(t, err.Error(), "fence: TableConfig", name)
			}
		}
		for _, table := range []string{"_t", "T9", "public.docs", "Public_2.Docs_3", strings.Repeat("a", b.maxIdentifier)} {
			cfg := good
			cfg.Table = table
			_, err := b.newTable(cfg)
			assert.NoError(t, err, table)
		}
	})
}

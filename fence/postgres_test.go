package fence_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/pgtest"
)

func TestPostgresStatements(t *testing.T) {
	tbl, err := fence.NewPostgresTable(fence.SQLConfig{Table: "app.docs", KeyColumn: "id", FenceColumn: "last_fence",
		Columns: []string{"title", "body"}})
	require.NoError(t, err)
	assert.Equal(t, `UPDATE "app"."docs" SET "title" = $1, "body" = $2, "last_fence" = $3::bigint WHERE "id" = $4 AND "last_fence" < $3::bigint`,
		tbl.UpdateStatement())
	assert.Equal(t, `INSERT INTO "app"."docs" AS "fenced" ("id", "title", "body", "last_fence") VALUES ($1, $2, $3, $4::bigint) `+
		`ON CONFLICT ("id") DO UPDATE SET "title" = EXCLUDED."title", "body" = EXCLUDED."body", "last_fence" = EXCLUDED."last_fence" `+
		`WHERE "fenced"."last_fence" < EXCLUDED."last_fence"::bigint`,
		tbl.UpsertStatement())
}

// TestPostgresTextFenceColumnFails: a fence column of the wrong type (text
// compares "99" above "100") makes both statements fail, never fence wrongly.
func TestPostgresTextFenceColumnFails(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE docs (id int PRIMARY KEY, body text, last_fence text NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO docs VALUES (1, 'x', '100')`)
	require.NoError(t, err)
	tbl, err := fence.NewPostgresTable(fence.SQLConfig{Table: "docs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"body"}})
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

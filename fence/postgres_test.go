package fence_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
)

// TestPostgresTextFenceColumnFails: a fence column of the wrong type (text
// compares "99" above "100") makes both statements fail, never fence wrongly.
func TestPostgresTextFenceColumnFails(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE docs (id int PRIMARY KEY, body text, last_fence text NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO docs VALUES (1, 'x', '100')`)
	require.NoError(t, err)
	tbl, err := fence.NewPostgresTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"body"}})
	require.NoError(t, err)
	err = tbl.Update(ctx, db, 1, tk(1, 99), "stale")
	require.Error(t, err)
	require.NotErrorIs(t, err, fence.ErrStale)
	err = tbl.Upsert(ctx, db, 1, tk(1, 99), "stale")
	require.Error(t, err)
	require.NotErrorIs(t, err, fence.ErrStale)
	var body string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT body FROM docs WHERE id = 1`).Scan(&body))
	assert.Equal(t, "x", body)
}

package fence_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/mysqltest"
)

// TestMySQLSnapshot: in a REPEATABLE READ transaction whose snapshot
// predates a newer write, the write compares with the newest mark (InnoDB's
// locking read), and so does the read of the mark that explains the
// rejection: stale, with the newer mark, never "not found".
func TestMySQLSnapshot(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	b := sqlBackends[1]
	require.Equal(t, "mysql", b.name)
	db := mysqltest.Open(t)
	tbl := b.docsTable(t, db, h)
	_, err := db.ExecContext(ctx, "INSERT INTO docs VALUES ('old', '', NULL, 10)")
	require.NoError(t, err)

	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	assert.EqualValues(t, 10, b.readDoc(t, tx, "old").fence, "the snapshot begins here")

	require.NoError(t, tbl.Update(ctx, db, "old", tk("old", 50), "newer", nil))
	require.NoError(t, tbl.Upsert(ctx, db, "new", tk("new", 50), "newer", nil))
	stale(t, tbl.Update(ctx, tx, "old", tk("old", 40), "older", nil), 40, 50)
	stale(t, tbl.Update(ctx, tx, "new", tk("new", 40), "older", nil), 40, 50)
	stale(t, tbl.Upsert(ctx, tx, "new", tk("new", 40), "older", nil), 40, 50)
	require.NoError(t, tbl.Update(ctx, tx, "old", tk("old", 60), "newest", nil))
	require.NoError(t, tx.Commit())
	assert.Equal(t, doc{"newest", sql.NullString{}, 60}, b.readDoc(t, db, "old"))
	assert.Equal(t, doc{"newer", sql.NullString{}, 50}, b.readDoc(t, db, "new"))
}

package main

import (
	"context"
	"testing"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/lockwatchtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewerTokenAtTheTable: lockwatchtest's NewerToken, written to a
// fenced PostgreSQL table (fence.NewPostgresTable on a *sql.DB, the
// fence.DB a service passes), moves the row's mark, so the holder's write
// after it is stale; a second NewerToken is newer still, and a lease taken
// after them writes again.
func TestNewerTokenAtTheTable(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE jobs (id text PRIMARY KEY, result text NOT NULL, last_fence bigint NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	jobs, err := fence.NewPostgresTable(fence.TableConfig{
		Table: "jobs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"result"},
		LockKey: func(id any) string { return "job:" + id.(string) },
	})
	require.NoError(t, err)
	srv := lockwatchtest.New(t, lease.Config{})
	l, err := srv.Locker().Acquire(ctx, "job:7")
	require.NoError(t, err)
	require.NoError(t, jobs.Upsert(ctx, db, "7", l.Token(), "holder's"))

	require.NoError(t, jobs.Upsert(ctx, db, "7", srv.NewerToken("job:7"), "next holder's"))
	var stale *fence.StaleError
	require.ErrorAs(t, jobs.Upsert(ctx, db, "7", l.Token(), "late"), &stale)
	require.ErrorIs(t, stale, fence.ErrStale)
	require.NoError(t, jobs.Upsert(ctx, db, "7", srv.NewerToken("job:7"), "the one after"))

	require.NoError(t, l.Release(ctx))
	next, err := srv.Locker().Acquire(ctx, "job:7")
	require.NoError(t, err)
	require.NoError(t, jobs.Upsert(ctx, db, "7", next.Token(), "retried"))
	var result string
	var mark int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT result, last_fence FROM jobs WHERE id = '7'`).Scan(&result, &mark))
	assert.Equal(t, "retried", result)
	assert.Equal(t, next.Fence(), mark)
	require.NoError(t, next.Release(ctx))
}

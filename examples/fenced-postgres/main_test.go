package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the pool against a real redis-server and a PostgreSQL schema
// of its own: results are written, the stuck worker's late write is
// rejected by the table's fence, and every row carries the token of the
// write that set it.
func TestRun(t *testing.T) {
	db := pgtest.Open(t)
	var schema string
	require.NoError(t, db.QueryRow("SELECT current_schema()").Scan(&schema))
	srv := redistest.Start(t)

	var out bytes.Buffer
	res, err := run(context.Background(), config{
		redis:    srv.Addr(),
		dsn:      withSearchPath(pgtest.DSN(), schema), // the test's schema, through the DSN as a user would
		table:    "jobs",
		workers:  4,
		jobs:     3,
		duration: 3 * time.Second,
		ttl:      200 * time.Millisecond,
		stuck:    true,
	}, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	assert.Positive(t, res.written.Load())
	assert.Positive(t, res.contended.Load(), "three jobs, four workers")
	assert.EqualValues(t, 1, res.stale.Load(), "the stuck worker's write is rejected")
	assert.Contains(t, out.String(), "worker 1: write of job-")

	var rows, unfenced int
	require.NoError(t, db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE last_fence <= 0) FROM jobs`).Scan(&rows, &unfenced))
	assert.Positive(t, rows)
	assert.Zero(t, unfenced)
}

// withSearchPath adds search_path to a URL or keyword/value DSN.
func withSearchPath(dsn, schema string) string {
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

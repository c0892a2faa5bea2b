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

// TestRun runs three candidates against a real redis-server and a
// PostgreSQL schema of its own: the frozen leader's term is lost, the next
// candidate is elected and claims the leader row, the frozen tick is
// refused, and the ticks table holds only ticks of terms in the order they
// led, each term's from its one leader.
func TestRun(t *testing.T) {
	db := pgtest.Open(t)
	var schema string
	require.NoError(t, db.QueryRow("SELECT current_schema()").Scan(&schema))
	srv := redistest.Start(t)

	var out bytes.Buffer
	res, err := run(context.Background(), config{
		redis:      srv.Addr(),
		dsn:        withSearchPath(pgtest.DSN(), schema),
		prefix:     "",
		candidates: 3,
		duration:   2 * time.Second,
		ttl:        200 * time.Millisecond,
		tick:       20 * time.Millisecond,
		stuck:      true,
	}, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	assert.EqualValues(t, 1, res.stale.Load(), "the frozen leader's tick is refused")
	assert.Contains(t, out.String(), "candidate-1: tick of term ")
	assert.GreaterOrEqual(t, res.terms.Load(), int64(2), "a term after the frozen one")
	assert.Positive(t, res.ticks.Load())

	// Ticks in insertion order: their terms never go back, and one term's
	// ticks are all its leader's.
	rows, err := db.Query(`SELECT term, worker FROM ticks ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var last int64
	leaders := map[int64]string{}
	n := 0
	for rows.Next() {
		var term int64
		var worker string
		require.NoError(t, rows.Scan(&term, &worker))
		assert.GreaterOrEqual(t, term, last, "a tick of an older term after a newer one's")
		if w, ok := leaders[term]; ok {
			assert.Equal(t, w, worker, "term %d ticked by two workers", term)
		}
		leaders[term], last = worker, term
		n++
	}
	require.NoError(t, rows.Err())
	assert.EqualValues(t, res.ticks.Load(), n)
	assert.GreaterOrEqual(t, len(leaders), 2)
	var leaderRow string
	require.NoError(t, db.QueryRow(`SELECT leader FROM leader WHERE last_fence = $1`, last).Scan(&leaderRow))
	assert.Equal(t, leaders[last], leaderRow, "the leader row names the newest term's leader")
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

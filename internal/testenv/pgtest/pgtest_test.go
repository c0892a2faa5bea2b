package pgtest_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
)

// TestOpenIsolatesAndCleansUp: each Open has a schema of its own on every
// pooled connection, tables with the same name do not meet, and the schema
// is gone once the test that opened it has ended.
func TestOpenIsolatesAndCleansUp(t *testing.T) {
	ctx := context.Background()
	var schemas []string
	t.Run("twice", func(t *testing.T) {
		for range 2 {
			db := pgtest.Open(t)
			var schema string
			require.NoError(t, db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema))
			assert.Regexp(t, `^pgtest_testopenisolatesandcleansup_t`, schema)
			assert.LessOrEqual(t, len(schema), 63, "PostgreSQL would truncate it")
			schemas = append(schemas, schema)

			_, err := db.ExecContext(ctx, "CREATE TABLE items (id int PRIMARY KEY)")
			require.NoError(t, err, "the same table name in each schema")
			_, err = db.ExecContext(ctx, "INSERT INTO items VALUES (1)")
			require.NoError(t, err)

			// Hold two connections at once: the second is a new one and must
			// have the schema too (a SET on one connection would not).
			c1, err := db.Conn(ctx)
			require.NoError(t, err)
			c2, err := db.Conn(ctx)
			require.NoError(t, err)
			for _, c := range []*sql.Conn{c1, c2} {
				var n int
				require.NoError(t, c.QueryRowContext(ctx, "SELECT count(*) FROM items").Scan(&n))
				assert.Equal(t, 1, n)
			}
			require.NoError(t, c1.Close())
			require.NoError(t, c2.Close())
		}
	})
	require.Len(t, schemas, 2)
	assert.NotEqual(t, schemas[0], schemas[1])

	cfg, err := pgx.ParseConfig(pgtest.DSN())
	require.NoError(t, err)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	for _, s := range schemas {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", s).Scan(&n))
		assert.Zero(t, n, "schema %s dropped on cleanup", s)
	}
}

func TestRequirePasses(t *testing.T) {
	pgtest.Require(t) // with the server up, neither a skip nor a failure
	assert.False(t, t.Skipped())
}

package mysqltest_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/mysqltest"
)

// TestOpenIsolatesAndCleansUp: each Open has a database of its own on every
// pooled connection, tables with the same name do not meet, and the
// database is gone once the test that opened it has ended.
func TestOpenIsolatesAndCleansUp(t *testing.T) {
	ctx := context.Background()
	var names []string
	t.Run("twice", func(t *testing.T) {
		for range 2 {
			db := mysqltest.Open(t)
			var name string
			require.NoError(t, db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name))
			assert.Regexp(t, `^mysqltest_testopenisolatesandcleansup_t`, name)
			assert.LessOrEqual(t, len(name), 64, "MySQL would refuse it")
			names = append(names, name)

			_, err := db.ExecContext(ctx, "CREATE TABLE items (id int PRIMARY KEY)")
			require.NoError(t, err, "the same table name in each database")
			_, err = db.ExecContext(ctx, "INSERT INTO items VALUES (1)")
			require.NoError(t, err)

			// Hold two connections at once: the second is a new one and must
			// use the database too (a USE on one connection would not).
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
	require.Len(t, names, 2)
	assert.NotEqual(t, names[0], names[1])

	cfg, err := mysql.ParseDSN(mysqltest.DSN())
	require.NoError(t, err)
	conn, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(conn)
	defer db.Close()
	for _, name := range names {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n))
		assert.Zero(t, n, "database %s dropped on cleanup", name)
	}
}

func TestRequirePasses(t *testing.T) {
	mysqltest.Require(t) // with the server up, neither a skip nor a failure
	assert.False(t, t.Skipped())
}

package fence

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatements: the statements each dialect builds, as the doc comments
// of NewPostgresTable and NewMySQLTable show them. The token check and the
// clock bound are part of the write; in MySQL's upsert the mark is assigned
// last, so that every comparison reads the mark from before the write.
func TestStatements(t *testing.T) {
	for _, tc := range []struct {
		name           string
		d              *dialect
		cfg            TableConfig
		update, upsert string
	}{
		{
			name: "postgres",
			d:    postgres,
			cfg:  TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"title", "body"}},
			update: `UPDATE "docs" SET "title" = $1, "body" = $2, "last_fence" = $3::bigint WHERE "id" = $4 AND "last_fence" < $3::bigint` +
				` AND ($5::bigint IS NULL OR $3::bigint <= (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + $5::bigint)`,
			upsert: `INSERT INTO "docs" AS "fenced" ("id", "title", "body", "last_fence") SELECT $1, $2, $3, $4::bigint ` +
				`WHERE ($5::bigint IS NULL OR $4::bigint <= (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + $5::bigint) ` +
				`ON CONFLICT ("id") DO UPDATE SET "title" = EXCLUDED."title", "body" = EXCLUDED."body", "last_fence" = EXCLUDED."last_fence" ` +
				`WHERE "fenced"."last_fence" < EXCLUDED."last_fence"::bigint`,
		},
		{
			name: "postgres qualified",
			d:    postgres,
			cfg:  TableConfig{Table: "app.docs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"title", "body"}},
			update: `UPDATE "app"."docs" SET "title" = $1, "body" = $2, "last_fence" = $3::bigint WHERE "id" = $4 AND "last_fence" < $3::bigint` +
				` AND ($5::bigint IS NULL OR $3::bigint <= (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + $5::bigint)`,
			upsert: `INSERT INTO "app"."docs" AS "fenced" ("id", "title", "body", "last_fence") SELECT $1, $2, $3, $4::bigint ` +
				`WHERE ($5::bigint IS NULL OR $4::bigint <= (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + $5::bigint) ` +
				`ON CONFLICT ("id") DO UPDATE SET "title" = EXCLUDED."title", "body" = EXCLUDED."body", "last_fence" = EXCLUDED."last_fence" ` +
				`WHERE "fenced"."last_fence" < EXCLUDED."last_fence"::bigint`,
		},
		{
			name: "mysql",
			d:    mysql,
			cfg:  TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"title"}},
			update: "UPDATE `docs` SET `title` = ?, `last_fence` = ? WHERE `id` = ? AND `last_fence` < ?" +
				" AND (? IS NULL OR ? <= CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED) + ?)",
			upsert: "INSERT INTO `docs` (`id`, `title`, `last_fence`) SELECT ?, ?, ? FROM DUAL " +
				"WHERE (? IS NULL OR ? <= CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED) + ?) ON DUPLICATE KEY UPDATE " +
				"`title` = IF(`last_fence` < ?, ?, `title`), `last_fence` = IF(`last_fence` < ?, ?, `last_fence`)",
		},
		{
			name: "mysql qualified",
			d:    mysql,
			cfg:  TableConfig{Table: "app.docs", KeyColumn: "id", FenceColumn: "last_fence", Columns: []string{"title", "body"}},
			update: "UPDATE `app`.`docs` SET `title` = ?, `body` = ?, `last_fence` = ? WHERE `id` = ? AND `last_fence` < ?" +
				" AND (? IS NULL OR ? <= CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED) + ?)",
			upsert: "INSERT INTO `app`.`docs` (`id`, `title`, `body`, `last_fence`) SELECT ?, ?, ?, ? FROM DUAL " +
				"WHERE (? IS NULL OR ? <= CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED) + ?) ON DUPLICATE KEY UPDATE " +
				"`title` = IF(`last_fence` < ?, ?, `title`), `body` = IF(`last_fence` < ?, ?, `body`), " +
				"`last_fence` = IF(`last_fence` < ?, ?, `last_fence`)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := newSQLTable(tc.d, tc.cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.update, tbl.update)
			assert.Equal(t, tc.upsert, tbl.upsert)
		})
	}
}

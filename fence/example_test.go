package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/fence"
)

// A write carries the token of the lease it was made under. Once a newer
// lease has written, the older one's late write is refused, and so is a
// replay of the newer one's.
func ExampleRedisStore_Write() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	store := fence.NewRedisStore(client, "invoices")

	fmt.Println(store.Write(ctx, "invoice-17", 41, []byte("draft")))
	fmt.Println(store.Write(ctx, "invoice-17", 42, []byte("sent")))

	err := store.Write(ctx, "invoice-17", 41, []byte("draft, late"))
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("refused:", stale.Token, "after", stale.HighWater)
	}
	fmt.Println(errors.Is(store.Write(ctx, "invoice-17", 42, []byte("sent twice")), fence.ErrStale))

	value, mark, _ := store.Read(ctx, "invoice-17")
	fmt.Printf("%s at %d\n", value, mark)
	// Output:
	// <nil>
	// <nil>
	// refused: 41 after 42
	// true
	// sent at 42
}

// A guard in front of a service that serializes its writes admits every
// request of the newest lease, and none of an older one's.
func ExampleRedisStore_Admit() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	var guard fence.Admitter = fence.NewRedisStore(client, "billing-api")

	fmt.Println(guard.Admit(ctx, "customer-3", 7))
	fmt.Println(guard.Admit(ctx, "customer-3", 7))
	fmt.Println(guard.Admit(ctx, "customer-3", 8))
	fmt.Println(errors.Is(guard.Admit(ctx, "customer-3", 7), fence.ErrStale))
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// true
}

// The statements a PostgresTable runs: the token check is part of the write.
func ExamplePostgresTable_UpdateStatement() {
	docs, err := fence.NewPostgresTable(fence.SQLConfig{
		Table:       "docs",
		KeyColumn:   "id",
		FenceColumn: "last_fence",
		Columns:     []string{"title", "body"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(docs.UpdateStatement())
	fmt.Println(docs.UpsertStatement())
	// Output:
	// UPDATE "docs" SET "title" = $1, "body" = $2, "last_fence" = $3::bigint WHERE "id" = $4 AND "last_fence" < $3::bigint
	// INSERT INTO "docs" AS "fenced" ("id", "title", "body", "last_fence") VALUES ($1, $2, $3, $4::bigint) ON CONFLICT ("id") DO UPDATE SET "title" = EXCLUDED."title", "body" = EXCLUDED."body", "last_fence" = EXCLUDED."last_fence" WHERE "fenced"."last_fence" < EXCLUDED."last_fence"::bigint
}

// The statements a MySQLTable runs: the mark is assigned last, so that every
// comparison in the upsert reads the mark from before the write.
func ExampleMySQLTable_UpdateStatement() {
	docs, err := fence.NewMySQLTable(fence.SQLConfig{
		Table:       "docs",
		KeyColumn:   "id",
		FenceColumn: "last_fence",
		Columns:     []string{"title"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(docs.UpdateStatement())
	fmt.Println(docs.UpsertStatement())
	// Output:
	// UPDATE `docs` SET `title` = ?, `last_fence` = ? WHERE `id` = ? AND `last_fence` < ?
	// INSERT INTO `docs` (`id`, `title`, `last_fence`) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE `title` = IF(`last_fence` < ?, ?, `title`), `last_fence` = IF(`last_fence` < ?, ?, `last_fence`)
}

// Writing a row under a lease: the token comes with the lease's context
// (or a request's Fencing-Token header), and a stale one is the fence
// working, not a failure to retry. The same code writes through a
// PostgresTable (db with a PostgreSQL driver, such as
// github.com/jackc/pgx/v5/stdlib) or a MySQLTable (with
// github.com/go-sql-driver/mysql).
func ExampleTable() {
	update := func(ctx context.Context, db *sql.DB, docs fence.Table, id, title, body string) error {
		token, ok := fence.FromContext(ctx)
		if !ok {
			return fence.ErrMissing
		}
		err := docs.Update(ctx, db, id, token, title, body)
		if errors.Is(err, fence.ErrStale) {
			return fmt.Errorf("a newer lease has written %s; dropping this write: %w", id, err)
		}
		return err
	}
	_ = update
}

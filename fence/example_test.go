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
	store := fence.NewRedisStore(client, "invoices", fence.RedisConfig{})
	// The tokens two leases of invoice-17 carry (lease.Lease.Token).
	older := fence.Mint("lockwatch", "invoice-17", 41, nil)
	newer := fence.Mint("lockwatch", "invoice-17", 42, nil)

	fmt.Println(store.Write(ctx, "invoice-17", older, []byte("draft")))
	fmt.Println(store.Write(ctx, "invoice-17", newer, []byte("sent")))

	err := store.Write(ctx, "invoice-17", older, []byte("draft, late"))
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("refused:", stale.Token.Fence, "after", stale.HighWater)
	}
	fmt.Println(errors.Is(store.Write(ctx, "invoice-17", newer, []byte("sent twice")), fence.ErrStale))

	value, mark, _ := store.Read(ctx, "invoice-17")
	fmt.Printf("%s at %d\n", value, mark)
	// Output:
	// <nil>
	// <nil>
	// refused: 41 after 42
	// true
	// sent at 42
}

// A token names the key it was minted for: another key's token is refused,
// however new, and the mark does not move.
func ExampleRedisStore_Write_foreign() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	store := fence.NewRedisStore(client, "invoices", fence.RedisConfig{})

	fmt.Println(store.Write(ctx, "invoice-18", fence.Mint("lockwatch", "invoice-18", 5, nil), []byte("draft")))
	err := store.Write(ctx, "invoice-18", fence.Mint("lockwatch", "order-1", 6, nil), []byte("overwritten"))
	fmt.Println(errors.Is(err, fence.ErrForeign), errors.Is(err, fence.ErrStale))
	value, mark, _ := store.Read(ctx, "invoice-18")
	fmt.Printf("%s at %d\n", value, mark)
	// Output:
	// <nil>
	// true false
	// draft at 5
}

// A store checks at start-up that its Redis keeps the marks across a
// restart. The Redis of these examples keeps nothing, so a service would
// stop here; the same server holds leases safely (a lease's tokens stay
// increasing across its restart).
func ExampleRedisStore_Check() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	store := fence.NewRedisStore(client, "payments", fence.RedisConfig{})

	err := store.Check(ctx)
	fmt.Println(errors.Is(err, fence.ErrNotDurable))
	fmt.Println(err)
	// Output:
	// true
	// fence: the store's Redis can forget its marks: neither an append-only file (aof_enabled:0) nor RDB snapshots (save ""): a restart erases every mark, and the next write with an older token is accepted; set appendonly yes
}

// A guard in front of a service that serializes its writes admits every
// request of the newest lease, and none of an older one's.
func ExampleRedisStore_Admit() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	var guard fence.Admitter = fence.NewRedisStore(client, "billing-api", fence.RedisConfig{})
	seven := fence.Mint("lockwatch", "customer-3", 7, nil)
	eight := fence.Mint("lockwatch", "customer-3", 8, nil)

	fmt.Println(guard.Admit(ctx, "customer-3", seven))
	fmt.Println(guard.Admit(ctx, "customer-3", seven))
	fmt.Println(guard.Admit(ctx, "customer-3", eight))
	fmt.Println(errors.Is(guard.Admit(ctx, "customer-3", seven), fence.ErrStale))
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// true
}

// A table whose rows carry the mark of the lock key that protects them
// (here "doc:<id>", which LockKey names). A write joins the caller's
// transaction: pass the *sql.Tx as the DB.
func ExampleNewPostgresTable() {
	docs, err := fence.NewPostgresTable(fence.TableConfig{
		Table:       "docs",
		KeyColumn:   "id",
		FenceColumn: "last_fence",
		Columns:     []string{"title", "body"},
		LockKey:     func(id any) string { return "doc:" + id.(string) },
	})
	if err != nil {
		panic(err) // the configuration is wrong: no retry fixes it
	}
	publish := func(ctx context.Context, db *sql.DB, id string, token fence.Token, title, body string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if err := docs.Upsert(ctx, tx, id, token, title, body); err != nil {
			return err
		}
		return tx.Commit()
	}
	_ = publish
}

// Names are checked when the table is made, and never reach a statement
// unless they are plain identifiers.
func ExampleNewMySQLTable() {
	_, err := fence.NewMySQLTable(fence.TableConfig{
		Table:       "docs; DROP TABLE docs",
		KeyColumn:   "id",
		FenceColumn: "last_fence",
	})
	fmt.Println(err)
	// Output:
	// fence: TableConfig.Table: "docs; DROP TABLE docs" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes)
}

// Writing a row under a lease: the token comes with the lease's context
// (or a request's Fencing-Token header), and a stale one is the fence
// working, not a failure to retry. The same code writes through the Table
// of NewPostgresTable (db with a PostgreSQL driver, such as
// github.com/jackc/pgx/v5/stdlib) or of NewMySQLTable (with
// github.com/go-sql-driver/mysql).
func ExampleTable() {
	update := func(ctx context.Context, db *sql.DB, docs fence.Table, id, title, body string) error {
		token, ok := fence.FromContext(ctx)
		if !ok {
			return fmt.Errorf("no lease token to write %s with", id)
		}
		err := docs.Update(ctx, db, id, token, title, body)
		if errors.Is(err, fence.ErrStale) {
			return fmt.Errorf("a newer lease has written %s; dropping this write: %w", id, err)
		}
		return err
	}
	_ = update
}

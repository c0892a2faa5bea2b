package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrNotDurable: Check found a Redis server that can forget a RedisStore's
// marks, by a restart or by eviction. A forgotten mark is 0 again, so the
// next write with any token, however old, is accepted.
var ErrNotDurable = errors.New("fence: the store's Redis can forget its marks")

// Check asks every Redis master the store writes to whether it keeps the
// store's marks, so that a service stops at start-up with a clear error
// rather than meet a late write that the fence accepts after the first
// restart of its Redis. The lock keys may live on a Redis without
// persistence (a lease's fencing tokens stay increasing across a restart);
// the marks that the tokens are compared with may not. A server fails with
// ErrNotDurable when
//
//   - it keeps neither an append-only file (INFO persistence: aof_enabled
//     is 0) nor RDB snapshots (CONFIG GET save is empty): a restart erases
//     every mark;
//   - its maxmemory-policy is allkeys-*: at maxmemory it may evict a mark.
//     (The volatile-* policies evict keys with a TTL only, and marks have
//     none.)
//
// Without an append-only file Check needs CONFIG GET save, which managed
// services often refuse; it then fails with that error, which is not
// ErrNotDurable: it could not tell, and the caller decides.
//
// Persistence narrows what a crash takes back; it does not end it. A
// store's key holds its value and its mark together, written by one
// script, so a crash takes both back to the last write the server kept,
// never one without the other. What it kept:
//
//   - appendonly yes with appendfsync always: every acknowledged write,
//     also on a crash of the host (each is flushed to disk before the
//     reply).
//   - appendonly yes with appendfsync everysec (Redis's default for the
//     file): every acknowledged write on a crash of Redis alone (the file
//     is written before the reply and the system keeps it); on a crash of
//     the host, up to about the last second of writes (two when the disk
//     is slow) is lost. A mark then goes back to its value of before that
//     second, and a write whose token lies between that mark and the lost
//     one is accepted, though a newer write had been accepted and
//     acknowledged: a late writer of that second that comes back after the
//     restart writes over nothing. With Admit the service behind the guard
//     kept what it wrote, so such a request is admitted after a newer one
//     wrote: a stale write.
//   - RDB snapshots only: everything since the last snapshot on any crash
//     (a clean shutdown saves), minutes by the save schedule.
//
// A failover to a replica that missed the last writes takes them back the
// same way. Where no acknowledged mark may ever go back, use appendfsync
// always, or a Table, whose marks are as durable as its rows.
//
// Check reads INFO and CONFIG GET save and writes nothing. On Cluster it
// asks every master, on a Ring every shard.
func (s *RedisStore) Check(ctx context.Context) error {
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return checkDurable(ctx, n, n.Options().Addr)
		})
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return checkDurable(ctx, n, n.Options().Addr)
		})
	}
	return checkDurable(ctx, s.client, "")
}

func checkDurable(ctx context.Context, c redis.Cmdable, addr string) error {
	where := ""
	if addr != "" {
		where = " on " + addr
	}
	info, err := c.Info(ctx).Result() // the default sections hold persistence and memory; several sections need Redis 7
	if err != nil {
		return fmt.Errorf("fence: check%s: %w", where, err)
	}
	fields := infoFields(info)
	if p := fields["maxmemory_policy"]; strings.HasPrefix(p, "allkeys-") {
		return fmt.Errorf("%w%s: maxmemory-policy is %q, which may evict a mark; set noeviction or a volatile-* policy", ErrNotDurable, where, p)
	}
	if fields["aof_enabled"] == "1" {
		return nil
	}
	save, err := c.ConfigGet(ctx, "save").Result()
	if err != nil {
		return fmt.Errorf("fence: check%s: no append-only file (aof_enabled:%s), and CONFIG GET save failed, so whether RDB snapshots are kept is unknown: %w",
			where, fields["aof_enabled"], err)
	}
	if strings.TrimSpace(save["save"]) == "" {
		return fmt.Errorf("%w%s: neither an append-only file (aof_enabled:%s) nor RDB snapshots (save \"\"): a restart erases every mark, and the next write with an older token is accepted; set appendonly yes", ErrNotDurable, where, fields["aof_enabled"])
	}
	return nil
}

// infoFields turns INFO output into its fields.
func infoFields(info string) map[string]string {
	fields := make(map[string]string)
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields
}

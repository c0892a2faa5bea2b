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
// rather than accept a late write after its Redis restarts empty. A server
// fails with ErrNotDurable when it keeps neither an append-only file (INFO
// persistence: aof_enabled is 0) nor RDB snapshots (CONFIG GET save is
// empty), or when its maxmemory-policy is allkeys-*, which may evict a mark
// (the volatile-* policies evict only keys with a TTL, and marks have none).
// Without an append-only file Check needs CONFIG GET save, which managed
// services often refuse: it then returns that error, not ErrNotDurable, and
// the caller decides.
//
// Check reads INFO and CONFIG GET save and writes nothing; on Cluster it
// asks every master, on a Ring every shard. What a crash still takes back
// with each setting is in RELIABILITY.md, "What a fence store's Redis
// keeps".
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

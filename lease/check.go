package lease

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// minRedisVersion is the oldest Redis that Check accepts: lockwatch is
// tested on Redis 7, and relies on effects replication of scripts, the
// default since 5.0 (the acquire script asks for it on older servers too,
// and is refused loudly where it cannot have it).
const minRedisVersion = "5.0"

// Check asks every Redis master the Locker writes to whether it can hold
// leases safely, so that a service stops at start-up with a clear error
// rather than meet a stream of failed or unknown acquires, or a second
// holder, in production:
//
//   - its version is at least 5.0;
//   - its maxmemory-policy is noeviction: any other policy may evict a held
//     lock key (volatile-* policies pick keys with a TTL, which every lock
//     key has) and let a second holder in.
//
// Check reads INFO only (no CONFIG, which managed services often disable)
// and writes nothing. On Cluster it asks every master.
func (lk *Locker) Check(ctx context.Context) error {
	if cc, ok := lk.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return checkServer(ctx, c, c.Options().Addr)
		})
	}
	return checkServer(ctx, lk.client, "")
}

func checkServer(ctx context.Context, c redis.Cmdable, addr string) error {
	where := ""
	if addr != "" {
		where = " on " + addr
	}
	info, err := c.Info(ctx).Result() // INFO with several sections needs Redis 7; the default has both
	if err != nil {
		return fmt.Errorf("lease: check%s: %w", where, err)
	}
	fields := infoFields(info)
	if err := checkVersion(fields["redis_version"]); err != nil {
		return fmt.Errorf("lease: check%s: %w", where, err)
	}
	if p := fields["maxmemory_policy"]; p != "noeviction" {
		return fmt.Errorf("lease: check%s: maxmemory-policy is %q: Redis may evict a held lock; set it to noeviction", where, p)
	}
	return nil
}

// checkVersion accepts a redis_version at or above minRedisVersion.
func checkVersion(v string) error {
	major, minor, ok := majorMinor(v)
	wantMajor, wantMinor, _ := majorMinor(minRedisVersion)
	switch {
	case !ok:
		return fmt.Errorf("unreadable redis_version %q", v)
	case major < wantMajor || major == wantMajor && minor < wantMinor:
		// ST1005 (both linters): "Redis" is a proper noun, and the error is
		// wrapped ("lease: check: Redis 4.0.9 is older than 5.0").
		//lint:ignore ST1005 "Redis" is a proper noun
		return fmt.Errorf("Redis %s is older than %s", v, minRedisVersion) //nolint:staticcheck // ST1005: as above

	}
	return nil
}

func majorMinor(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
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

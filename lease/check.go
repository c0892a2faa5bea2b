package lease

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// minVersions are the oldest servers Check accepts. lockwatch relies on
// effects replication of scripts, Redis's default since 5.0 (the acquire
// script asks for it on older servers too, and is refused loudly where it
// cannot have it). Valkey's first release, 7.2, is the Redis 7.2 it
// forked, so every Valkey qualifies; both are tested (README).
var minVersions = map[string]string{"Redis": "5.0", "Valkey": "7.2"}

// Check asks every Redis or Valkey master the Locker writes to whether it
// can hold leases safely, so that a service stops at start-up with a clear
// error rather than meet a stream of failed or unknown acquires, or a
// second holder, in production:
//
//   - its version is at least Redis 5.0 or Valkey 7.2;
//   - its maxmemory-policy is noeviction: any other policy may evict a held
//     lock key (volatile-* policies pick keys with a TTL, which every lock
//     key has) and let a second holder in;
//   - it runs Lua scripts, which every lease operation is: Valkey can run
//     without its Lua module, and a server may disable EVAL.
//
// Its errors name the server and its version ("Valkey 8.0.1"). Check reads
// INFO (no CONFIG, which managed services often disable) and evaluates one
// script that touches no key. On Cluster it asks every master.
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
	srv := identify(fields)
	if err := checkVersion(srv); err != nil {
		return fmt.Errorf("lease: check%s: %w", where, err)
	}
	if p := fields["maxmemory_policy"]; p != "noeviction" {
		return fmt.Errorf("lease: check%s: maxmemory-policy is %q: %s may evict a held lock; set it to noeviction", where, p, srv)
	}
	if err := checkLua(ctx, c, srv); err != nil {
		return fmt.Errorf("lease: check%s: %w", where, err)
	}
	return nil
}

// server is what INFO says a master is. Valkey reports redis_version too,
// fixed at the Redis it is compatible with, and its own version in
// valkey_version (server_name:valkey), which every release has had.
type server struct{ name, version string }

func (s server) String() string { return s.name + " " + s.version }

func identify(fields map[string]string) server {
	if v, ok := fields["valkey_version"]; ok || fields["server_name"] == "valkey" {
		return server{"Valkey", v}
	}
	return server{"Redis", fields["redis_version"]}
}

// checkVersion accepts a server at or above its minVersions entry.
func checkVersion(srv server) error {
	major, minor, ok := majorMinor(srv.version)
	least := minVersions[srv.name]
	wantMajor, wantMinor, _ := majorMinor(least)
	switch {
	case !ok:
		return fmt.Errorf("unreadable %s version %q", srv.name, srv.version)
	case major < wantMajor || major == wantMajor && minor < wantMinor:
		return fmt.Errorf("%s is older than %s", srv, least)
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

package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinels are redis-sentinel processes (redis-server --sentinel) that
// monitor one primary under one master name and decide its failover
// themselves: the test only breaks things.
type Sentinels struct {
	name    string
	servers []*Server
}

// SentinelConfig is how the sentinels watch their primary.
type SentinelConfig struct {
	Name      string        // the master name clients ask for
	Count     int           // how many sentinels, 3 by default
	Quorum    int           // how many must agree the primary is down, a majority by default
	DownAfter time.Duration // down-after-milliseconds, 1s by default
	Failover  time.Duration // failover-timeout, 5s by default
}

// StartSentinels launches the sentinels of cfg on 127.0.0.1, each with its
// config file and log in t.TempDir(), and returns once every one of them
// names primary as the master and has found every replica of primary that
// the test made beforehand (ReplicaOf). A t.Cleanup kills them.
func StartSentinels(t testing.TB, primary *Server, cfg SentinelConfig) *Sentinels {
	t.Helper()
	Require(t)
	dirs := make([]string, cfg.withDefaults().Count)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	ss, err := LaunchSentinels(dirs, primary.Addr(), cfg)
	if ss != nil {
		t.Cleanup(func() {
			if err := ss.Kill(); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// LaunchSentinels is StartSentinels for code that has no testing.TB (the
// chaos harness): one sentinel per directory of dirs (cfg.Count is
// len(dirs)), monitoring the primary at primaryAddr, which may be a proxy
// in front of it. On an error the Sentinels started so far are returned
// too; the caller must Kill them.
func LaunchSentinels(dirs []string, primaryAddr string, cfg SentinelConfig) (*Sentinels, error) {
	cfg.Count = len(dirs)
	cfg = cfg.withDefaults()
	host, port, err := net.SplitHostPort(primaryAddr)
	if err != nil {
		return nil, fmt.Errorf("redistest: sentinels: %w", err)
	}
	ss := &Sentinels{name: cfg.Name}
	for i, dir := range dirs {
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s %[4]d\n"+
			"sentinel down-after-milliseconds %[1]s %[5]d\n"+
			"sentinel failover-timeout %[1]s %[6]d\n"+
			"sentinel parallel-syncs %[1]s 1\n",
			cfg.Name, host, port, cfg.Quorum, cfg.DownAfter.Milliseconds(), cfg.Failover.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return ss, err
		}
		s, err := newServer(dir, nil)
		if err != nil {
			return ss, err
		}
		s.conf = conf
		ss.servers = append(ss.servers, s)
		if err := s.start(); err != nil {
			return ss, fmt.Errorf("redistest: sentinel %d: %w", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return ss, ss.waitReady(ctx, primaryAddr, cfg.Count)
}

// Kill kills every sentinel.
func (ss *Sentinels) Kill() error {
	var errs []error
	for i, s := range ss.servers {
		if err := s.Kill(); err != nil {
			errs = append(errs, fmt.Errorf("redistest: kill sentinel %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

func (c SentinelConfig) withDefaults() SentinelConfig {
	if c.Name == "" {
		c.Name = "redistest"
	}
	if c.Count == 0 {
		c.Count = 3
	}
	if c.Quorum == 0 {
		c.Quorum = c.Count/2 + 1
	}
	if c.DownAfter == 0 {
		c.DownAfter = time.Second
	}
	if c.Failover == 0 {
		c.Failover = 5 * time.Second
	}
	return c
}

// waitReady waits until every sentinel knows the others and the replicas
// the primary at addr has now: before that a failover could not be agreed
// on, or could promote nothing.
func (ss *Sentinels) waitReady(ctx context.Context, addr string, count int) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("redistest: sentinels: primary %s: %w", addr, err)
	}
	replicas := parseInfo(info)["connected_slaves"]
	for _, s := range ss.servers {
		err := s.waitFor(ctx, func(c *redis.SentinelClient) bool {
			m, err := c.Master(ctx, ss.name).Result()
			return err == nil && net.JoinHostPort(m["ip"], m["port"]) == addr &&
				m["num-other-sentinels"] == strconv.Itoa(count-1) && m["num-slaves"] == replicas
		})
		if err != nil {
			return fmt.Errorf("redistest: sentinel %s not ready: %w", s.Addr(), err)
		}
	}
	return nil
}

// waitFor polls the sentinel s until cond holds or ctx ends.
func (s *Server) waitFor(ctx context.Context, cond func(*redis.SentinelClient) bool) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	for !cond(c) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
	return nil
}

// Name is the master name the sentinels monitor.
func (ss *Sentinels) Name() string { return ss.name }

// Addrs are the sentinels' addresses, for redis.FailoverOptions.
func (ss *Sentinels) Addrs() []string {
	addrs := make([]string, len(ss.servers))
	for i, s := range ss.servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Servers are the sentinel processes, to kill, pause or restart one.
func (ss *Sentinels) Servers() []*Server { return ss.servers }

// Client returns a go-redis failover client of the sentinels' master,
// closed when t ends.
func (ss *Sentinels) Client(t testing.TB, opts ...func(*redis.FailoverOptions)) *redis.Client {
	t.Helper()
	o := &redis.FailoverOptions{MasterName: ss.name, SentinelAddrs: ss.Addrs()}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewFailoverClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Master returns the address ("host:port") a majority of the sentinels
// name as the master now, or "" when they do not agree (during a failover,
// or while sentinels are down).
func (ss *Sentinels) Master(ctx context.Context) string {
	votes := map[string]int{}
	for _, s := range ss.servers {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialerRetries: 1})
		addr, err := c.GetMasterAddrByName(ctx, ss.name).Result()
		_ = c.Close()
		if err == nil && len(addr) == 2 {
			votes[net.JoinHostPort(addr[0], addr[1])]++
		}
	}
	for addr, n := range votes {
		if n > len(ss.servers)/2 {
			return addr
		}
	}
	return ""
}

// WaitPromoted waits until a majority of the sentinels name a master other
// than the one at old ("host:port") and returns its address.
func (ss *Sentinels) WaitPromoted(ctx context.Context, old string) (string, error) {
	for {
		if addr := ss.Master(ctx); addr != "" && addr != old {
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("redistest: no new master of %s named by a majority of sentinels: %w", ss.name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

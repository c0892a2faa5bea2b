package redistest

import (
	"context"
	"fmt"
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
	cfg = cfg.withDefaults()
	ss := &Sentinels{name: cfg.Name}
	for i := range cfg.Count {
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
			"sentinel down-after-milliseconds %[1]s %[4]d\n"+
			"sentinel failover-timeout %[1]s %[5]d\n"+
			"sentinel parallel-syncs %[1]s 1\n",
			cfg.Name, primary.Port(), cfg.Quorum, cfg.DownAfter.Milliseconds(), cfg.Failover.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := newServer(dir, nil)
		s.conf = conf
		t.Cleanup(func() {
			if err := s.Kill(); err != nil {
				t.Errorf("redistest: kill sentinel %d: %v", i, err)
			}
		})
		if err == nil {
			err = s.start()
		}
		if err != nil {
			t.Fatalf("redistest: sentinel %d: %v", i, err)
		}
		ss.servers = append(ss.servers, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := ss.waitReady(ctx, primary, cfg.Count); err != nil {
		t.Fatal(err)
	}
	return ss
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
// primary has now: before that a failover could not be agreed on, or could
// promote nothing.
func (ss *Sentinels) waitReady(ctx context.Context, primary *Server, count int) error {
	info, err := primary.Do(ctx, "INFO", "replication")
	if err != nil {
		return err
	}
	replicas := parseInfo(fmt.Sprint(info))["connected_slaves"]
	for _, s := range ss.servers {
		err := s.waitFor(ctx, func(c *redis.SentinelClient) bool {
			m, err := c.Master(ctx, ss.name).Result()
			return err == nil && m["ip"] == "127.0.0.1" && m["port"] == strconv.Itoa(primary.Port()) &&
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

// WaitPromoted waits until a majority of the sentinels name a master other
// than old and returns its address ("127.0.0.1:port").
func (ss *Sentinels) WaitPromoted(ctx context.Context, old *Server) (string, error) {
	for {
		votes := map[string]int{}
		for _, s := range ss.servers {
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
			addr, err := c.GetMasterAddrByName(ctx, ss.name).Result()
			_ = c.Close()
			if err == nil && len(addr) == 2 && addr[1] != strconv.Itoa(old.Port()) {
				votes[addr[0]+":"+addr[1]]++
			}
		}
		for addr, n := range votes {
			if n > len(ss.servers)/2 {
				return addr, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("redistest: no new master of %s named by a majority of sentinels: %w", ss.name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

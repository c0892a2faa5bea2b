package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	clusterSlots = 16384
	// Small so that failure detection in tests takes seconds, not the
	// default 15s.
	clusterNodeTimeout = "2000"
)

// Cluster is a Redis Cluster of masters only, each a Server owned by the
// test. It exists because key-to-slot routing, cross-slot errors and
// per-shard failures only show up against a real cluster.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts masters cluster-mode servers on free loopback ports,
// spreads the 16384 slots evenly over them, joins them with CLUSTER MEET and
// waits until every node reports cluster_state:ok and all agree on the slot
// map. Every node's cluster bus listens on its own free port (cluster-port),
// so nothing depends on port+10000 being free.
//
// It takes about two seconds however fast the machine: a Redis master does
// not report cluster_state:ok until 2s after it started, so that a restarted
// master cannot take writes before the cluster had a chance to demote it.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	Require(t)
	if masters < 1 {
		t.Fatalf("redistest: StartCluster needs at least one master, got %d", masters)
		return nil
	}
	c := &Cluster{}
	for range masters {
		c.nodes = append(c.nodes, Start(t,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", clusterNodeTimeout,
			// Without it a lone node does not know its own address and
			// reports an empty host in CLUSTER SLOTS.
			"--cluster-announce-ip", "127.0.0.1",
		))
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for i, n := range c.nodes {
		first, last := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		if _, err := n.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last); err != nil {
			t.Fatalf("redistest: %s: CLUSTER ADDSLOTSRANGE %d %d: %v", n.Addr(), first, last, err)
			return nil
		}
	}
	for _, n := range c.nodes[1:] {
		if _, err := c.nodes[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", n.Port(), n.busPort); err != nil {
			t.Fatalf("redistest: CLUSTER MEET %s: %v", n.Addr(), err)
			return nil
		}
	}
	if err := c.waitConverged(ctx); err != nil {
		t.Fatalf("redistest: cluster did not converge: %v", err)
		return nil
	}
	return c
}

// Addrs returns the nodes' addresses, usable as ClusterOptions.Addrs.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns the servers so tests can kill, pause or restart one shard.
func (c *Cluster) Nodes() []*Server { return slices.Clone(c.nodes) }

// Client returns a cluster client, closed on t.Cleanup, that has already
// loaded the slot map and reached every master, so the first command of a
// test does not pay for (or fail in) discovery.
func (c *Cluster) Client(t testing.TB, opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	t.Helper()
	o := &redis.ClusterOptions{Addrs: c.Addrs()}
	for _, opt := range opts {
		opt(o)
	}
	cc := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var seen atomic.Int32
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		seen.Add(1)
		return m.Ping(ctx).Err()
	})
	if err != nil {
		t.Fatalf("redistest: cluster client: ping masters: %v", err)
		return nil
	}
	if got := int(seen.Load()); got != len(c.nodes) {
		t.Fatalf("redistest: cluster client sees %d masters, want %d", got, len(c.nodes))
		return nil
	}
	return cc
}

// waitConverged polls until every node reports a healthy cluster and the
// same slot map. cluster_state:ok alone is not enough: a node can be ok with
// a slot map that gossip has not finished updating on its peers.
func (c *Cluster) waitConverged(ctx context.Context) error {
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		defer clients[i].Close()
	}
	var why string
	for {
		var ok bool
		ok, why = converged(ctx, clients)
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", ctx.Err(), why)
		case <-time.After(pollInterval):
		}
	}
}

func converged(ctx context.Context, clients []*redis.Client) (bool, string) {
	var first string
	for _, cl := range clients {
		text, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return false, fmt.Sprintf("%s: CLUSTER INFO: %v", cl.Options().Addr, err)
		}
		info := parseInfo(text)
		if info["cluster_state"] != "ok" ||
			info["cluster_slots_assigned"] != strconv.Itoa(clusterSlots) ||
			info["cluster_known_nodes"] != strconv.Itoa(len(clients)) {
			return false, fmt.Sprintf("%s: state=%s slots_assigned=%s known_nodes=%s", cl.Options().Addr,
				info["cluster_state"], info["cluster_slots_assigned"], info["cluster_known_nodes"])
		}
		slots, err := cl.ClusterSlots(ctx).Result()
		if err != nil {
			return false, fmt.Sprintf("%s: CLUSTER SLOTS: %v", cl.Options().Addr, err)
		}
		m := slotMap(slots)
		if first == "" {
			first = m
		} else if m != first {
			return false, fmt.Sprintf("%s sees slots %s, first node sees %s", cl.Options().Addr, m, first)
		}
	}
	return true, ""
}

// slotMap renders the slot ranges and their owners in a canonical order so
// two nodes' views can be compared as strings.
func slotMap(slots []redis.ClusterSlot) string {
	ranges := make([]string, 0, len(slots))
	slices.SortFunc(slots, func(a, b redis.ClusterSlot) int { return a.Start - b.Start })
	for _, s := range slots {
		owner := ""
		if len(s.Nodes) > 0 {
			owner = s.Nodes[0].ID + "@" + s.Nodes[0].Addr
		}
		ranges = append(ranges, fmt.Sprintf("%d-%d=%s", s.Start, s.End, owner))
	}
	return strings.Join(ranges, ",")
}

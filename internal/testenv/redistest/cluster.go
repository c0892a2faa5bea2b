package redistest

import (
	"context"
	"errors"
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

// clusterArgs are the redis-server arguments of every cluster node, master
// or replica.
var clusterArgs = []string{
	"--cluster-enabled", "yes",
	"--cluster-config-file", "nodes.conf",
	"--cluster-node-timeout", clusterNodeTimeout,
	// Without it a lone node does not know its own address and
	// reports an empty host in CLUSTER SLOTS.
	"--cluster-announce-ip", "127.0.0.1",
}

// Cluster is a Redis Cluster of masters, each a Server owned by the test,
// plus any replicas added with AddReplica. It exists because key-to-slot
// routing, cross-slot errors and per-shard failures only show up against a
// real cluster.
//
// Its methods are not safe for concurrent use by several goroutines.
type Cluster struct {
	nodes    []*Server // masters, in slot order
	replicas []*Server
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
	dirs := make([]string, masters)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	c, err := LaunchCluster(dirs, nil, nil)
	t.Cleanup(func() {
		if err := c.Kill(); err != nil {
			t.Errorf("%v", err)
		}
	})
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	return c
}

// LaunchCluster is StartCluster for code that has no testing.TB (the chaos
// harness): one master per directory of dirs, each started with the
// cluster arguments plus args(i) when args is not nil, and handed to
// started(i, node) when that is not nil, before the nodes meet. A harness
// that puts proxies in front of node i announces their ports in args
// (--cluster-announce-port, --cluster-announce-bus-port) and points them
// at the node in started. The Cluster is returned on an error too, with
// what was started: the caller must Kill it.
func LaunchCluster(dirs []string, args func(i int) []string, started func(i int, node *Server)) (*Cluster, error) {
	c := &Cluster{}
	for i, dir := range dirs {
		extra := slices.Clone(clusterArgs)
		if args != nil {
			extra = append(extra, args(i)...)
		}
		n, err := Launch(dir, extra...)
		if err != nil {
			return c, err
		}
		c.nodes = append(c.nodes, n)
		if started != nil {
			started(i, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	masters := len(c.nodes)
	for i, n := range c.nodes {
		first, last := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		if _, err := n.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last); err != nil {
			return c, fmt.Errorf("redistest: %s: CLUSTER ADDSLOTSRANGE %d %d: %w", n.Addr(), first, last, err)
		}
	}
	for _, n := range c.nodes[1:] {
		if _, err := c.nodes[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", n.Port(), n.busPort); err != nil {
			return c, fmt.Errorf("redistest: CLUSTER MEET %s: %w", n.Addr(), err)
		}
	}
	if err := c.waitConverged(ctx); err != nil {
		return c, fmt.Errorf("redistest: cluster did not converge: %w", err)
	}
	return c, nil
}

// Kill kills every node, masters and replicas.
func (c *Cluster) Kill() error {
	var errs []error
	for _, n := range slices.Concat(c.nodes, c.replicas) {
		errs = append(errs, n.Kill())
	}
	return errors.Join(errs...)
}

// AddReplica starts one more cluster-mode redis-server, joins it to the
// cluster and makes it a replica of master (CLUSTER REPLICATE <master node id>),
// then waits until: the replica's link is up and its initial sync is done, the
// master has an acknowledgement from it (so that WAIT on the master is
// answered at once), and every node of the cluster (masters and replicas)
// knows all nodes and agrees on the slot map, replicas included. Killed by
// t.Cleanup like every Server.
//
// master must be one of Nodes(). The replica is not counted by Nodes or
// Addrs. Like any Redis Cluster replica it fails over on its own: once master
// has been unreachable for longer than the cluster node timeout (2s here),
// the replica promotes itself and takes master's slots.
func (c *Cluster) AddReplica(t testing.TB, master *Server) *Server {
	t.Helper()
	r, err := c.LaunchReplica(t.TempDir(), master, nil)
	if r != nil {
		t.Cleanup(func() { _ = r.Kill() })
	}
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	return r
}

// LaunchReplica is AddReplica without a testing.TB: the replica runs in
// dir with the cluster arguments plus extraArgs, is handed to started (if
// not nil) before it joins, as in LaunchCluster, and the caller must Kill
// it (Cluster.Kill does). On an error the replica is returned too when it
// was started.
func (c *Cluster) LaunchReplica(dir string, master *Server, started func(*Server), extraArgs ...string) (*Server, error) {
	if master == nil || !slices.Contains(c.nodes, master) {
		return nil, fmt.Errorf("redistest: LaunchReplica: %v is not a master of this cluster", master)
	}
	r, err := Launch(dir, slices.Concat(clusterArgs, extraArgs)...)
	if err != nil {
		return nil, err
	}
	c.replicas = append(c.replicas, r)
	if started != nil {
		started(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.attachReplica(ctx, r, master); err != nil {
		return r, err
	}
	if err := c.waitConverged(ctx); err != nil {
		return r, fmt.Errorf("redistest: cluster did not converge after adding replica %s of %s: %w", r.Addr(), master.Addr(), err)
	}
	return r, nil
}

// attachReplica joins r to the cluster through master, makes it master's
// replica and waits until the replication stream is acknowledged.
func (c *Cluster) attachReplica(ctx context.Context, r, master *Server) error {
	reply, err := master.Do(ctx, "CLUSTER", "MYID")
	if err != nil {
		return fmt.Errorf("redistest: %s: CLUSTER MYID: %w", master.Addr(), err)
	}
	id, _ := reply.(string)
	// Meeting master itself, rather than any node, is what teaches r the
	// master's node id soonest: it arrives with master's first PONG.
	if _, err := r.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", master.Port(), master.busPort); err != nil {
		return fmt.Errorf("redistest: %s: CLUSTER MEET %s: %w", r.Addr(), master.Addr(), err)
	}
	// Until that PONG, r answers "Unknown node".
	for {
		_, err = r.Do(ctx, "CLUSTER", "REPLICATE", id)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: %s: CLUSTER REPLICATE %s (%s): %w", r.Addr(), id, master.Addr(), err)
		case <-time.After(pollInterval):
		}
	}
	return r.waitReplicating(ctx, master)
}

// Addrs returns the masters' addresses, usable as ClusterOptions.Addrs.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns the masters so tests can kill, pause or restart one shard.
// Replicas added with AddReplica are not among them.
func (c *Cluster) Nodes() []*Server { return slices.Clone(c.nodes) }

// Replicas returns the replicas added with AddReplica or LaunchReplica.
func (c *Cluster) Replicas() []*Server { return slices.Clone(c.replicas) }

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

// waitConverged polls until every node, master or replica, reports a healthy
// cluster, knows every node and sees the same slot map with the same
// replicas. cluster_state:ok alone is not enough: a node can be ok with a
// slot map that gossip has not finished updating on its peers.
func (c *Cluster) waitConverged(ctx context.Context) error {
	all := slices.Concat(c.nodes, c.replicas)
	clients := make([]*redis.Client, len(all))
	for i, n := range all {
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

// converged reports whether the nodes behind clients, which must be all the
// nodes of the cluster, agree; if not, it says why.
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
		// CLUSTER SHARDS, its replacement, needs Redis 7; the library supports 5.0 on.
		//lint:ignore SA1019 CLUSTER SLOTS works on every Redis the library supports (5.0+)
		slots, err := cl.ClusterSlots(ctx).Result() //nolint:staticcheck // SA1019: CLUSTER SHARDS needs Redis 7; the library supports 5.0+

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

// slotMap renders the slot ranges, their owners and the owners' replicas in
// a canonical order so two nodes' views can be compared as strings. The
// replicas count because a node lists a replica in CLUSTER SLOTS only once
// gossip told it the replica is attached and has synced.
func slotMap(slots []redis.ClusterSlot) string {
	ranges := make([]string, 0, len(slots))
	slices.SortFunc(slots, func(a, b redis.ClusterSlot) int { return a.Start - b.Start })
	for _, s := range slots {
		nodes := make([]string, len(s.Nodes))
		for i, n := range s.Nodes {
			nodes[i] = n.ID + "@" + n.Addr
		}
		if len(nodes) > 1 {
			slices.Sort(nodes[1:]) // replicas, in no particular order
		}
		ranges = append(ranges, fmt.Sprintf("%d-%d=%s", s.Start, s.End, strings.Join(nodes, "+")))
	}
	return strings.Join(ranges, ",")
}

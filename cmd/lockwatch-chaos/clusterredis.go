package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/redis/go-redis/v9"
)

// clusterMasters is how many masters the Cluster topology has, each with
// one replica.
const clusterMasters = 3

// clusterRedis is the Cluster topology: three masters with a replica each.
// Every node sits behind two fault proxies, one for clients and
// replication, one for the cluster bus, and announces their ports
// (cluster-announce-port, cluster-announce-bus-port), so that cutting both
// cuts the node off from clients, replicas and the other nodes at once.
// The cluster decides every failover after a kill or a cut; the harness
// breaks things, and runs what an operator runs: CLUSTER FAILOVER, with
// and without TAKEOVER, and a slot migration.
type clusterRedis struct {
	cluster     *redistest.Cluster
	nodes       []*clusterNode
	nodeTimeout time.Duration
	keys        []string       // the lock keys, as the holders name them
	slots       map[string]int // the slot of each lock key's Redis keys
	promotions  promotions
}

type clusterNode struct {
	server *redistest.Server
	proxy  *faultproxy.Proxy // clients and replication
	bus    *faultproxy.Proxy // the cluster bus
	// from is the loopback address the node connects to its peers from
	// (bind-source-addr), so that their proxies can cut it off alone.
	from string
}

func (n *clusterNode) String() string { return describeServer(n.server) }

func startClusterRedis(dir string, ttl time.Duration, keys []string) (*clusterRedis, error) {
	r := &clusterRedis{nodeTimeout: time.Duration(clusterNodeTimeoutTTLs * float64(ttl)), keys: keys, slots: map[string]int{}}
	for i := range 2 * clusterMasters {
		n := &clusterNode{from: fmt.Sprintf("127.0.0.%d", 11+i)}
		var err error
		if n.proxy, err = faultproxy.Launch(""); err == nil {
			n.bus, err = faultproxy.Launch("")
		}
		r.nodes = append(r.nodes, n)
		if err != nil {
			_ = r.close()
			return nil, err
		}
	}
	args := func(i int) []string {
		n := r.nodes[i]
		return []string{
			"--cluster-node-timeout", strconv.FormatInt(r.nodeTimeout.Milliseconds(), 10),
			"--cluster-announce-port", port(n.proxy.Addr()),
			"--replica-announce-port", port(n.proxy.Addr()),
			"--cluster-announce-bus-port", port(n.bus.Addr()),
			"--enable-debug-command", "local", "--maxmemory-policy", "noeviction",
			// Connections from 127.0.0.N are not "local" to protected
			// mode; the server still listens on 127.0.0.1 only.
			"--bind-source-addr", n.from, "--protected-mode", "no",
			"--rdb-del-sync-files", "yes", // a restart starts empty, not from its last sync
		}
	}
	dirs, err := subdirs(dir, "node", 2*clusterMasters)
	if err != nil {
		_ = r.close()
		return nil, err
	}
	r.cluster, err = redistest.LaunchCluster(dirs[:clusterMasters], args, func(i int, s *redistest.Server) { r.nodes[i].attach(s) })
	if err != nil {
		_ = r.close()
		return nil, err
	}
	for i := range clusterMasters {
		j := clusterMasters + i
		_, err := r.cluster.LaunchReplica(dirs[j], r.nodes[i].server, r.nodes[j].attach, args(j)...)
		if err != nil {
			_ = r.close()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := r.nodes[0].client()
	defer c.Close()
	for _, k := range keys {
		lock := leasekeys.Of(lockNamespace, k).Lock
		slot, err := c.ClusterKeySlot(ctx, lock).Result()
		if err != nil {
			_ = r.close()
			return nil, err
		}
		r.slots[k] = int(slot)
	}
	return r, nil
}

// attach makes s n's server and points n's proxies at it, once it
// listens and before it joins the cluster.
func (n *clusterNode) attach(s *redistest.Server) {
	n.server = s
	n.proxy.SetTarget(n.server.Addr())
	n.bus.SetTarget(net.JoinHostPort("127.0.0.1", strconv.Itoa(n.server.BusPort())))
}

// client is a connection straight to n (not through its proxy), for the
// harness's own commands; its caller closes it.
func (n *clusterNode) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: n.server.Addr(), MaxRetries: -1, DialerRetries: 1})
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func (r *clusterRedis) target() lockTarget {
	var addrs []string
	for _, n := range r.nodes[:clusterMasters] {
		addrs = append(addrs, n.proxy.Addr())
	}
	return lockTarget{Topology: topoCluster, Addrs: addrs}
}

func (r *clusterRedis) failovers() []failover { return r.promotions.all() }

func (r *clusterRedis) close() error {
	var errs []error
	if r.cluster != nil {
		errs = append(errs, r.cluster.Kill())
	}
	for _, n := range r.nodes {
		if n.proxy != nil {
			errs = append(errs, n.proxy.Close())
		}
		if n.bus != nil {
			errs = append(errs, n.bus.Close())
		}
	}
	return errors.Join(errs...)
}

// view is the cluster as one node sees it: every node's id, role and
// master, and which node serves each lock key's slot.
type view struct {
	masters []*clusterNode // in the order of r.nodes
	id      map[*clusterNode]string
	master  map[*clusterNode]*clusterNode // a replica's master
	owner   map[string]*clusterNode       // lock key -> the master serving its slot
}

// look asks the nodes, in order, for CLUSTER NODES until one answers with
// a view in which every lock key's slot has a master that is not failed.
func (r *clusterRedis) look() (view, error) {
	var last error
	for range 50 {
		for _, n := range r.nodes {
			v, err := r.viewFrom(n)
			if err == nil {
				return v, nil
			}
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return view{}, fmt.Errorf("no node gives a whole view of the cluster: %w", last)
}

func (r *clusterRedis) viewFrom(from *clusterNode) (view, error) {
	c := from.client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return view{}, err
	}
	v := view{id: map[*clusterNode]string{}, master: map[*clusterNode]*clusterNode{}, owner: map[string]*clusterNode{}}
	byID := map[string]*clusterNode{}
	masterOf := map[*clusterNode]string{}
	isReplica, failed := map[*clusterNode]bool{}, map[*clusterNode]bool{}
	for line := range strings.Lines(text) {
		// <id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := r.byProxy(addr)
		if n == nil {
			continue
		}
		v.id[n], byID[f[0]] = f[0], n
		flags := f[2]
		if strings.Contains(flags, "fail") && !strings.Contains(flags, "fail?") { // fail? is only suspected
			failed[n] = true
			continue
		}
		if strings.Contains(flags, "slave") {
			masterOf[n], isReplica[n] = f[3], true
			continue
		}
		for _, rng := range f[8:] {
			if strings.HasPrefix(rng, "[") {
				continue // a slot being migrated or imported
			}
			lo, hi, _ := strings.Cut(rng, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(cmp.Or(hi, lo))
			if err1 != nil || err2 != nil {
				continue
			}
			for _, k := range r.keys {
				if s := r.slots[k]; a <= s && s <= b {
					v.owner[k] = n
				}
			}
		}
	}
	for n, id := range masterOf {
		v.master[n] = byID[id]
	}
	for _, n := range r.nodes {
		if _, ok := v.id[n]; ok && !isReplica[n] && !failed[n] {
			v.masters = append(v.masters, n)
		}
	}
	if len(v.owner) != len(r.keys) {
		return v, fmt.Errorf("%s sees masters for %d of %d lock keys", from, len(v.owner), len(r.keys))
	}
	return v, nil
}

func (r *clusterRedis) byProxy(addr string) *clusterNode {
	for _, n := range r.nodes {
		if n.proxy.Addr() == addr {
			return n
		}
	}
	return nil
}

// replicaOf is m's replica in v, nil when it has none.
func (v view) replicaOf(m *clusterNode) *clusterNode {
	for n, master := range v.master {
		if master == m {
			return n
		}
	}
	return nil
}

// keysOf are the lock keys whose slots m serves in v.
func (v view) keysOf(m *clusterNode) []string {
	var keys []string
	for k, n := range v.owner {
		if n == m {
			keys = append(keys, k)
		}
	}
	return keys
}

func (r *clusterRedis) inject(f fault, stop <-chan struct{}) (string, error) {
	// Every fault hits the master serving the slot of one lock key, so
	// that leases are held where it strikes: the faults take the keys in
	// turn.
	key := r.keys[(f.N-1)%len(r.keys)]
	needsReplica := f.Kind == faultMasterKill || f.Kind == faultMasterPartition || f.Kind == faultClusterFailover || f.Kind == faultClusterTakeover
	v, m, err := r.masterOf(key, needsReplica)
	if err != nil {
		return "", err
	}
	switch f.Kind {
	case faultMasterKill:
		broken := now()
		if err := m.server.Kill(); err != nil {
			return "", err
		}
		promoted, perr := r.awaitPromotion(f, v, m, broken, stop)
		sleep(f.Dur, stop)
		if err := m.server.Restart(); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s (serving %s) killed (SIGKILL), %s, restarted empty, %s", m, key, promoted,
			awaitDemotion(m.server, &r.promotions, stop)), perr
	case faultMasterPartition:
		broken := now()
		r.partition(m, true)
		promoted, perr := r.awaitPromotion(f, v, m, broken, stop)
		sleep(f.Dur, stop)
		r.partition(m, false)
		return fmt.Sprintf("%s (serving %s) cut off from clients, its replica and the other nodes, %s, then reconnected, %s",
			m, key, promoted, awaitDemotion(m.server, &r.promotions, stop)), perr
	case faultClusterFailover, faultClusterTakeover:
		args := []any{"CLUSTER", "FAILOVER"}
		if f.Kind == faultClusterTakeover {
			args = append(args, "TAKEOVER")
		}
		rep := v.replicaOf(m)
		broken := now()
		if err := command(rep.server.Addr(), 5*time.Second, args...); err != nil {
			return "", err
		}
		promoted, perr := r.awaitPromotion(f, v, m, broken, stop)
		sleep(f.Dur, stop)
		return fmt.Sprintf("%v on %s, replica of %s (serving %s): %s", args, rep, m, key, promoted), perr
	case faultSlotMigrate:
		return r.migrate(v, m, key, f.Dur, stop)
	}
	return primaryFault(f, m.server, m.proxy, stop)
}

// masterOf finds the master serving key's slot, and with replica the
// master's replica too: after a failover the old master rejoins as a
// replica within seconds, so it is looked for again until then.
func (r *clusterRedis) masterOf(key string, replica bool) (view, *clusterNode, error) {
	deadline := time.Now().Add(10*r.nodeTimeout + 30*time.Second)
	for {
		v, err := r.look()
		if err != nil {
			return v, nil, err
		}
		m := v.owner[key]
		if !replica || v.replicaOf(m) != nil {
			return v, m, nil
		}
		if time.Now().After(deadline) {
			return v, nil, fmt.Errorf("%s, serving %s, has no replica", m, key)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// partition cuts m off from every client and every other node (cut), or
// ends the cut: its own proxies swallow what comes in, the others' swallow
// what it sends. At the end every connection that crossed the cut is
// reset (its stream lost bytes: a cluster bus or replication link with a
// gap is one no network delivers), so that the nodes reconnect.
func (r *clusterRedis) partition(m *clusterNode, cut bool) {
	for _, p := range []*faultproxy.Proxy{m.proxy, m.bus} {
		if cut {
			p.Set(faultproxy.Blackhole)
		} else {
			p.Set(faultproxy.Reset)
			p.Set(faultproxy.Pass)
		}
	}
	for _, n := range r.nodes {
		if n == m {
			continue
		}
		for _, p := range []*faultproxy.Proxy{n.proxy, n.bus} {
			if cut {
				p.Isolate(m.from)
			} else {
				p.Rejoin(m.from)
			}
		}
	}
}

// awaitPromotion waits until old's replica in v reports itself a master,
// records the promotion (fault f, broken at broken) for old's lock keys
// and says how long it took. A cluster that does not get there is an
// error, unless the run stopped first; the caller heals the fault either
// way.
func (r *clusterRedis) awaitPromotion(f fault, v view, old *clusterNode, broken int64, stop <-chan struct{}) (string, error) {
	rep := v.replicaOf(old)
	deadline := time.Now().Add(10*r.nodeTimeout + 30*time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			return "the run stopped before a promotion", nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		role := rep.server.Role(ctx)
		cancel()
		if role == "master" {
			at := r.promotions.add(f, broken, v.keysOf(old)...)
			return fmt.Sprintf("%s promoted %v later", rep, time.Duration(at-broken).Round(time.Millisecond)), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "no replica promoted", fmt.Errorf("%s, replica of %s, not promoted within %v", rep, old, 10*r.nodeTimeout+30*time.Second)
}

// migrate moves the slot of key's Redis keys from m to the next master,
// as resharding does, slowly: the slot stays migrating (the source
// answers ASK for keys it no longer has, TRYAGAIN for a script whose keys
// are split) for the fault's length while leases on it are renewed; then
// every node is told the new owner (MOVED from then on).
func (r *clusterRedis) migrate(v view, m *clusterNode, key string, d time.Duration, stop <-chan struct{}) (string, error) {
	var dst *clusterNode
	for _, n := range v.masters {
		if n != m {
			dst = n
			break
		}
	}
	if dst == nil {
		return "", errors.New("no other master to migrate to")
	}
	slot := r.slots[key]
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	src, to := m.client(), dst.client()
	defer src.Close()
	defer to.Close()
	moved := false
	defer func() {
		if !moved { // an error midway: the slot goes back to where it was
			for _, c := range []*redis.Client{to, src} {
				_ = c.Do(context.Background(), "CLUSTER", "SETSLOT", slot, "STABLE").Err()
			}
		}
	}()
	before := redirects(ctx, src)
	if err := to.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", v.id[m]).Err(); err != nil {
		return "", err
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", v.id[dst]).Err(); err != nil {
		return "", err
	}
	sleep(d/2, stop)
	keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
	if err != nil {
		return "", err
	}
	host, p, _ := net.SplitHostPort(dst.server.Addr())
	for _, k := range keys {
		// One key at a time, a pause between: a lease's lock key and its
		// fence record spend a while on different nodes. A key that
		// expired meanwhile answers NOKEY, a status, not an error.
		if err := src.Migrate(ctx, host, p, k, 0, 5*time.Second).Err(); err != nil {
			return "", fmt.Errorf("MIGRATE %s: %w", k, err)
		}
		sleep(d/time.Duration(2*max(len(keys), 1)), stop)
	}
	for _, c := range []*redis.Client{to, src} {
		if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", v.id[dst]).Err(); err != nil {
			return "", err
		}
		moved = true // from the first SETSLOT NODE on, STABLE would not undo it
	}
	for _, n := range r.nodes {
		if n == m || n == dst || v.master[n] != nil {
			continue
		}
		c := n.client()
		_ = c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", v.id[dst]).Err() // gossip tells it anyway
		_ = c.Close()
	}
	sleep(d/4, stop) // clients with the old slot map meet MOVED now
	after := redirects(ctx, src)
	return fmt.Sprintf("slot %d (%s, %d keys) migrated from %s to %s; the source answered ASK %d, TRYAGAIN %d, MOVED %d times",
		slot, key, len(keys), m, dst, after["ASK"]-before["ASK"], after["TRYAGAIN"]-before["TRYAGAIN"], after["MOVED"]-before["MOVED"]), nil
}

// redirects are the redirection and retry errors c's server has answered
// so far, by prefix (INFO errorstats).
func redirects(ctx context.Context, c *redis.Client) map[string]int {
	text, _ := c.Info(ctx, "errorstats").Result()
	out := map[string]int{}
	for line := range strings.Lines(text) {
		// errorstat_ASK:count=3
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "errorstat_"), ":count=")
		if n, err := strconv.Atoi(rest); ok && err == nil {
			out[name] = n
		}
	}
	return out
}

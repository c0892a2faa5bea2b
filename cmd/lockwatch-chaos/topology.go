package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// topology is the shape of the lock Redis a run deploys, and with it who
// decides a failover and which faults the schedule can draw.
type topology string

const (
	// topoSingle: a primary and a replica behind one fault proxy. The
	// harness itself promotes the replica and re-points the proxy, as a
	// floating address would.
	topoSingle topology = "single"
	// topoSentinel: a primary, two replicas and three redis-sentinel
	// processes; holders connect through redis.NewFailoverClient and the
	// sentinels decide every failover.
	topoSentinel topology = "sentinel"
	// topoCluster: three masters with a replica each; holders connect
	// through redis.NewClusterClient and the cluster fails a master over
	// itself, or when told to (CLUSTER FAILOVER).
	topoCluster topology = "cluster"
)

var topologies = []topology{topoSingle, topoSentinel, topoCluster}

func parseTopology(s string) (topology, error) {
	t := topology(s)
	if !slices.Contains(topologies, t) {
		names := make([]string, len(topologies))
		for i, t := range topologies {
			names[i] = string(t)
		}
		return "", fmt.Errorf("-topology: unknown topology %q (known: %s)", s, strings.Join(names, ", "))
	}
	return t, nil
}

// faults are the kinds the schedule can inject on t, in allFaults' order.
// Faults on holder processes, on the current primary and on the proxy in
// front of it work on every topology. A hand-made failover, a restart
// without one and a SIGSTOP or blackhole past the TTL are the single
// topology's; on Sentinel a stop or a cut past down-after-milliseconds is
// a failover the sentinels decide.
func (t topology) faults() []faultKind {
	only := map[faultKind]topology{
		faultRedisStop: topoSingle, faultBlackhole: topoSingle, faultKill: topoSingle, faultFailover: topoSingle,
		faultHolderPartition: topoSingle, // Sentinel and Cluster clients dial the addresses the servers announce
		faultPrimaryKill:     topoSentinel, faultPrimaryStop: topoSentinel, faultPrimaryPartition: topoSentinel,
		faultSentinelRestart: topoSentinel, faultFailoverTwice: topoSentinel,
		faultMasterKill: topoCluster, faultMasterPartition: topoCluster, faultClusterFailover: topoCluster,
		faultClusterTakeover: topoCluster, faultSlotMigrate: topoCluster,
	}
	var kinds []faultKind
	for _, k := range allFaults {
		if o, ok := only[k]; !ok || o == t {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// lockTarget is how a holder reaches the lock Redis. The parent hands it
// to every child process, so it travels as JSON.
type lockTarget struct {
	Topology topology `json:"topology"`
	Addrs    []string `json:"addrs"`            // single: the proxy; sentinel: the sentinels; cluster: the masters' proxies
	Master   string   `json:"master,omitempty"` // sentinel: the master name
}

// client opens one replica's connection to the lock Redis with the client
// options lockwatch recommends for a lease client: context deadlines bound
// socket reads, so a renewal against a stalled server ends at its
// deadline.
func (t lockTarget) client(ttl time.Duration) redis.UniversalClient {
	switch t.Topology {
	case topoCluster:
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 t.Addrs,
			ContextTimeoutEnabled: true,
			DialTimeout:           ttl,
			PoolSize:              4,
		})
	case topoSentinel:
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:            t.Master,
			SentinelAddrs:         t.Addrs,
			ContextTimeoutEnabled: true,
			DialTimeout:           ttl,
			PoolSize:              4,
		})
	}
	return redis.NewClient(&redis.Options{
		Addr:                  t.Addrs[0],
		ContextTimeoutEnabled: true,
		DialTimeout:           ttl,
		PoolSize:              4,
	})
}

// deployment is a running lock Redis of one topology.
type deployment interface {
	target() lockTarget
	// inject runs one fault on the servers (not on holders) and returns
	// what it hit; it returns when the fault has healed or stop is closed.
	inject(f fault, stop <-chan struct{}) (string, error)
	// failovers are the replicas promoted so far.
	failovers() []failover
	close() error
}

// failover is one replica promoted in place of a failed primary, on the
// history's clock: when the primary was broken (killed, stopped, cut off,
// or told to hand over) and when the replica was promoted; and, when the
// old primary came back as a primary too (a restart, a resume, a healed
// partition), from when until it reported itself a replica.
type failover struct {
	Fault            int       // the fault's number
	Kind             faultKind // the fault's kind
	Broken, Promoted int64
	Back, Demoted    int64 // 0: it did not come back as a primary
	// Keys are the lock keys the primary served; nil means every key (a
	// topology with one primary).
	Keys []string
}

// serves reports whether the failed primary served key: a permit's key,
// "<key>#<index>", is served where its semaphore's key is (one slot).
func (f failover) serves(key string) bool {
	base, _, _ := strings.Cut(key, "#")
	return f.Keys == nil || slices.Contains(f.Keys, base)
}

// promotions records failovers as a deployment's faults make them.
type promotions struct {
	mu   sync.Mutex
	list []failover
}

// add records a promotion now of a primary broken at broken by fault f
// that served keys (nil: every key), and returns now.
func (p *promotions) add(f fault, broken int64, keys ...string) int64 {
	at := now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, failover{Fault: f.N, Kind: f.Kind, Broken: broken, Promoted: at, Keys: keys})
	return at
}

// demoted records that the old primary of the last promotion was back as
// a primary from back until demoted.
func (p *promotions) demoted(back, demoted int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.list); n > 0 {
		p.list[n-1].Back, p.list[n-1].Demoted = back, demoted
	}
}

func (p *promotions) all() []failover {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.list)
}

// startDeployment starts the lock Redis of cfg's topology, its servers in
// directories under dir; keys are the lock keys the holders use.
func startDeployment(cfg config, dir string, keys []string) (deployment, error) {
	switch cfg.topology {
	case topoSentinel:
		return startSentinelRedis(dir, cfg.ttl, cfg.skew)
	case topoCluster:
		return startClusterRedis(dir, cfg.ttl, keys)
	}
	return startLockRedis(dir, cfg.skew)
}

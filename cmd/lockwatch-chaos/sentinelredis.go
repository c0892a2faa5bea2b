package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// sentinelMaster is the master name the sentinels monitor.
const sentinelMaster = "lockwatch-chaos"

// sentinelReplicas is how many replicas the primary has: two, so that a
// failover leaves one replica behind it.
const sentinelReplicas = 2

// sentinelRedis is the Sentinel topology: a primary and two replicas and
// three redis-sentinel processes that monitor them and decide every
// failover. Each server sits behind a fault proxy of its own and announces
// the proxy's port (replica-announce-port), so that clients, sentinels and
// replicas all reach it through the proxy, as they would reach it over one
// network: cutting the proxy off cuts the server off from all of them.
// The harness only breaks things, and waits for the sentinels' decision.
type sentinelRedis struct {
	nodes     []*sentinelNode
	sentinels *redistest.Sentinels
	// failoverTimeout is the sentinels' failover-timeout: they do not
	// fail the same master name over again within twice that.
	failoverTimeout time.Duration

	promotions promotions
}

type sentinelNode struct {
	server *redistest.Server
	proxy  *faultproxy.Proxy
}

// startSentinelRedis starts the Sentinel topology; the replicas' wall
// clocks are skew behind the machine's.
func startSentinelRedis(dir string, ttl, skew time.Duration) (*sentinelRedis, error) {
	r := &sentinelRedis{failoverTimeout: 2 * ttl}
	for i := range 1 + sentinelReplicas {
		p, err := faultproxy.Launch("") // pointed at the server once it listens
		if err != nil {
			_ = r.close()
			return nil, err
		}
		_, port, _ := net.SplitHostPort(p.Addr())
		n := &sentinelNode{proxy: p}
		r.nodes = append(r.nodes, n)
		args := append(slices.Clone(serverArgs), "--replica-announce-ip", "127.0.0.1", "--replica-announce-port", port)
		behind := skew
		if i == 0 {
			behind = 0 // the first primary keeps the machine's clock
		}
		if n.server, err = launch(filepath.Join(dir, fmt.Sprintf("node-%d", i)), behind, args...); err != nil {
			_ = r.close()
			return nil, err
		}
		p.SetTarget(n.server.Addr())
	}
	for _, n := range r.nodes[1:] {
		if err := n.server.ReplicaOfAddr(r.nodes[0].proxy.Addr()); err != nil {
			_ = r.close()
			return nil, err
		}
	}
	dirs, err := subdirs(dir, "sentinel", 3)
	if err != nil {
		_ = r.close()
		return nil, err
	}
	r.sentinels, err = redistest.LaunchSentinels(dirs, r.nodes[0].proxy.Addr(), redistest.SentinelConfig{
		Name:      sentinelMaster,
		DownAfter: time.Duration(sentinelDownAfterTTLs * float64(ttl)),
		Failover:  r.failoverTimeout,
	})
	if err != nil {
		_ = r.close()
		return nil, err
	}
	return r, nil
}

func (r *sentinelRedis) target() lockTarget {
	return lockTarget{Topology: topoSentinel, Addrs: r.sentinels.Addrs(), Master: sentinelMaster}
}

func (r *sentinelRedis) close() error {
	var errs []error
	if r.sentinels != nil {
		errs = append(errs, r.sentinels.Kill())
	}
	for _, n := range r.nodes {
		errs = append(errs, n.proxy.Close())
		if n.server != nil {
			errs = append(errs, n.server.Kill())
		}
	}
	return errors.Join(errs...)
}

// primary is the node a majority of the sentinels name as the master,
// asked again until they agree (right after a failover or a sentinel's
// restart they may not, for a moment), for up to 10 seconds.
func (r *sentinelRedis) primary() (*sentinelNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		addr := r.sentinels.Master(ctx)
		for _, n := range r.nodes {
			if n.proxy.Addr() == addr {
				return n, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no master named by a majority of the sentinels (%q)", addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *sentinelRedis) inject(f fault, stop <-chan struct{}) (string, error) {
	if f.Kind == faultSentinelRestart {
		s := r.sentinels.Servers()[f.Target%len(r.sentinels.Servers())]
		if err := s.Kill(); err != nil {
			return "", err
		}
		sleep(f.Down, stop)
		return fmt.Sprintf("sentinel 127.0.0.1:%d killed (SIGKILL) and restarted", s.Port()), s.Restart()
	}
	p, err := r.primary()
	if err != nil {
		return "", err
	}
	switch f.Kind {
	case faultPrimaryKill:
		return r.killFailover(f, p, f.Dur, stop)
	case faultFailoverTwice:
		first, err := r.killFailover(f, p, 0, stop)
		if err != nil {
			return first, err
		}
		q, err := r.primary()
		if err != nil {
			return first, err
		}
		second, err := r.killFailover(f, q, f.Dur, stop)
		return first + "; then " + second, err
	case faultPrimaryStop:
		broken := now()
		if err := p.server.Pause(); err != nil {
			return "", err
		}
		promoted, perr := r.awaitPromotion(f, p, broken, stop)
		sleep(f.Dur, stop)
		if err := p.server.Resume(); err != nil {
			return "", err
		}
		return describeServer(p.server) + " stopped (SIGSTOP), " + promoted + ", then continued, " +
			awaitDemotion(p.server, &r.promotions, stop), perr
	case faultPrimaryPartition:
		broken := now()
		p.proxy.Set(faultproxy.Blackhole)
		promoted, perr := r.awaitPromotion(f, p, broken, stop)
		sleep(f.Dur, stop)
		// Reset, then pass: the cut connections lost bytes, and a
		// replication stream with a gap is one no network delivers.
		p.proxy.Set(faultproxy.Reset)
		p.proxy.Set(faultproxy.Pass)
		return describeServer(p.server) + " cut off from clients, sentinels and replicas, " + promoted + ", then reconnected, " +
			awaitDemotion(p.server, &r.promotions, stop), perr
	}
	return primaryFault(f, p.server, p.proxy, stop)
}

// killFailover kills the primary p (fault f), waits for the sentinels to
// promote a replica, then after down more restarts p empty (no
// persistence, rdb-del-sync-files): the sentinels find it back and make it
// a replica of the new primary.
func (r *sentinelRedis) killFailover(f fault, p *sentinelNode, down time.Duration, stop <-chan struct{}) (string, error) {
	broken := now()
	if err := p.server.Kill(); err != nil {
		return "", err
	}
	promoted, perr := r.awaitPromotion(f, p, broken, stop)
	sleep(down, stop)
	if err := p.server.Restart(); err != nil {
		return "", err
	}
	return describeServer(p.server) + " killed (SIGKILL), " + promoted + ", restarted empty, " +
		awaitDemotion(p.server, &r.promotions, stop), perr
}

// awaitPromotion waits until a majority of the sentinels name a primary
// other than old, which fault f broke at the instant broken, records the
// promotion and says which and how long it took. Sentinels that do not
// get there are an error (the run would measure nothing), unless the run
// stopped first; the caller heals the fault either way.
func (r *sentinelRedis) awaitPromotion(f fault, old *sentinelNode, broken int64, stop <-chan struct{}) (string, error) {
	// Twice the failover timeout bounds a second failover of the same
	// master name; a minute more covers the vote on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.failoverTimeout+time.Minute)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		select {
		case <-stop:
			close(stopped)
			cancel()
		case <-ctx.Done():
		}
	}()
	addr, err := r.sentinels.WaitPromoted(ctx, old.proxy.Addr())
	if err != nil {
		select {
		case <-stopped:
			return "the run stopped before a promotion", nil
		default:
		}
		return "no replica promoted", err
	}
	at := r.promotions.add(f, broken)
	for _, n := range r.nodes {
		if n.proxy.Addr() == addr {
			addr = describeServer(n.server)
		}
	}
	return fmt.Sprintf("%s promoted %v later", addr, time.Duration(at-broken).Round(time.Millisecond)), nil
}

func (r *sentinelRedis) failovers() []failover { return r.promotions.all() }

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// lockRedis is the Redis deployment the leases live on: a primary, a
// replica, and the fault proxy every holder reaches the primary through.
// A failover promotes the replica and re-points the proxy at it, as a
// Sentinel-aware client or a floating address would; the old primary comes
// back empty as the new replica.
type lockRedis struct {
	proxy *faultproxy.Proxy

	mu         sync.Mutex
	primary    *redistest.Server
	replica    *redistest.Server
	cutOff     bool // the replica was cut off by StopReplication and not yet promoted
	promotions promotions
}

// serverArgs: DEBUG is disabled by default since Redis 7; "local" allows it
// from loopback connections only. noeviction is what lockwatch requires of
// a lock server. rdb-del-sync-files: a replica keeps the RDB file of its
// last full sync, and loads it when restarted, so a server that had ever
// been a replica would not restart empty.
var serverArgs = []string{"--enable-debug-command", "local", "--maxmemory-policy", "noeviction", "--rdb-del-sync-files", "yes"}

// startLockRedis starts the single topology; the replica's wall clock is
// skew behind the machine's.
func startLockRedis(dir string, skew time.Duration) (*lockRedis, error) {
	r := &lockRedis{}
	var err error
	if r.primary, err = launch(filepath.Join(dir, "lock-a"), 0, serverArgs...); err != nil {
		return nil, err
	}
	if r.replica, err = launch(filepath.Join(dir, "lock-b"), skew, serverArgs...); err != nil {
		_ = r.close()
		return nil, err
	}
	if err = r.replica.ReplicaOf(r.primary); err != nil {
		_ = r.close()
		return nil, err
	}
	if r.proxy, err = faultproxy.Launch(r.primary.Addr()); err != nil {
		_ = r.close()
		return nil, err
	}
	return r, nil
}

// launch starts a redis-server in its own directory under the run's, its
// wall clock skew behind the machine's (-clock-skew).
func launch(dir string, skew time.Duration, args ...string) (*redistest.Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if skew != 0 {
		return redistest.LaunchSkewed(dir, -skew, args...)
	}
	return redistest.Launch(dir, args...)
}

// subdirs makes n directories prefix-0 ... under dir, one per server.
func subdirs(dir, prefix string, n int) ([]string, error) {
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(dir, fmt.Sprintf("%s-%d", prefix, i))
		if err := os.MkdirAll(dirs[i], 0o755); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// close stops the proxy and kills both servers (a paused one included).
func (r *lockRedis) close() error {
	var errs []error
	if r.proxy != nil {
		errs = append(errs, r.proxy.Close())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cutOff && r.replica != nil {
		// Releases the listener StopReplication parked as a fake primary.
		errs = append(errs, r.replica.Promote())
	}
	for _, s := range []*redistest.Server{r.primary, r.replica} {
		if s != nil {
			errs = append(errs, s.Kill())
		}
	}
	return errors.Join(errs...)
}

func (r *lockRedis) current() *redistest.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.primary
}

// inject runs f on this deployment: a crash or a hand-made failover, or
// one of the faults every topology has.
func (r *lockRedis) inject(f fault, stop <-chan struct{}) (string, error) {
	switch f.Kind {
	case faultKill:
		s := r.current()
		return describeServer(s) + " killed (SIGKILL) and restarted empty", r.killRestart(f.Down, stop)
	case faultFailover:
		return r.failover(f, stop)
	}
	return primaryFault(f, r.current(), r.proxy, stop)
}

func (r *lockRedis) failovers() []failover { return r.promotions.all() }

func (r *lockRedis) target() lockTarget {
	return lockTarget{Topology: topoSingle, Addrs: []string{r.proxy.Addr()}}
}

// killRestart is a crash of the primary and its restart without
// persistence: every lock and every fence record is gone. The replica
// resyncs the empty dataset, as a real one would.
func (r *lockRedis) killRestart(down time.Duration, stop <-chan struct{}) error {
	p := r.current()
	if err := p.Kill(); err != nil {
		return err
	}
	sleep(down, stop)
	if err := p.Restart(); err != nil {
		return err
	}
	r.mu.Lock()
	replica := r.replica
	r.mu.Unlock()
	return replica.ReplicaOf(p)
}

// failover cuts the replica off, lets the primary take writes it will
// never see for lag, crashes the primary, promotes the replica and points
// the proxy at it. Clients' pooled connections are reset so that they
// reconnect to the new primary at once. The old primary restarts empty and
// becomes the new replica.
func (r *lockRedis) failover(f fault, stop <-chan struct{}) (string, error) {
	lag, down := f.Dur, f.Down
	r.mu.Lock()
	old, next := r.primary, r.replica
	r.mu.Unlock()
	if err := next.StopReplication(); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.cutOff = true
	r.mu.Unlock()
	sleep(lag, stop)
	broken := now()
	if err := old.Kill(); err != nil {
		return "", err
	}
	sleep(down, stop)
	if err := next.Promote(); err != nil {
		return "", err
	}
	r.proxy.SetTarget(next.Addr())
	r.proxy.Set(faultproxy.Reset)
	r.proxy.Set(faultproxy.Pass)
	r.mu.Lock()
	r.primary, r.replica, r.cutOff = next, old, false
	r.mu.Unlock()
	r.promotions.add(f, broken)
	if err := old.Restart(); err != nil {
		return "", err
	}
	if err := old.ReplicaOf(next); err != nil {
		return "", err
	}
	return "primary is now 127.0.0.1:" + strconv.Itoa(next.Port()), nil
}

// sleep waits d or until stop is closed.
func sleep(d time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}

func describeServer(s *redistest.Server) string {
	return fmt.Sprintf("redis-server 127.0.0.1:%d", s.Port())
}

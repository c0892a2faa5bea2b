package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/redis/go-redis/v9"
)

// primaryFault injects the faults that hit the current primary, or the
// proxy in front of it, the same way on every topology: a SIGSTOP, DEBUG
// SLEEP, CLIENT PAUSE and the proxy's modes. On Sentinel the sentinels'
// and the replicas' links pass the same proxy as the clients', as they
// would cross the same network.
func primaryFault(f fault, primary *redistest.Server, proxy *faultproxy.Proxy, stop <-chan struct{}) (string, error) {
	switch f.Kind {
	case faultRedisStop:
		if err := primary.Pause(); err != nil {
			return "", err
		}
		sleep(f.Dur, stop)
		return describeServer(primary) + " stopped and continued", primary.Resume()
	case faultDebugSleep:
		secs := strconv.FormatFloat(f.Dur.Seconds(), 'f', 3, 64)
		return "DEBUG SLEEP " + secs + " on " + describeServer(primary),
			command(primary.Addr(), f.Dur+30*time.Second, "DEBUG", "SLEEP", secs)
	case faultClientPause:
		ms := f.Dur.Milliseconds()
		if err := command(primary.Addr(), 10*time.Second, "CLIENT", "PAUSE", ms, "ALL"); err != nil {
			return "", err
		}
		sleep(f.Dur, stop)
		return fmt.Sprintf("CLIENT PAUSE %d ALL on %s", ms, describeServer(primary)),
			command(primary.Addr(), 10*time.Second, "CLIENT", "UNPAUSE")
	case faultDelay, faultBlackhole, faultReset, faultDuplicate, faultSlowAcquire:
		mode := faultproxy.Blackhole
		switch f.Kind {
		case faultDelay, faultSlowAcquire:
			mode = faultproxy.Delay(f.Delay)
		case faultReset:
			mode = faultproxy.Reset
		case faultDuplicate:
			mode = faultproxy.Duplicate(f.Delay)
		}
		copied, _ := proxy.Copies()
		proxy.Set(mode)
		sleep(f.Dur, stop)
		proxy.Set(faultproxy.Pass)
		note := "proxy " + mode.String() + " in front of " + describeServer(primary)
		if f.Kind == faultDuplicate {
			now, _ := proxy.Copies()
			note += fmt.Sprintf(", %d commands copied", now-copied)
		}
		return note, nil
	}
	return "", fmt.Errorf("fault kind %q is not one of this topology's", f.Kind)
}

// command sends one command straight to the server at addr (not through a
// proxy), waiting up to wait for the reply: DEBUG SLEEP answers only after
// sleeping.
func command(addr string, wait time.Duration, args ...any) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: wait, DialerRetries: 1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return c.Do(ctx, args...).Err()
}

// awaitDemotion waits until s, an old primary back after a failover,
// reports itself a replica, records the interval in p (the last
// promotion's) and says how long it took. Until then it is a primary too.
// On Sentinel it takes the writes of every client that asks a sentinel
// not yet told of the failover (go-redis asks one), a second holder of a
// key included; a Cluster master refuses writes for its first two seconds
// after a restart and learns of the failover meanwhile. So a fault that
// brings an old primary back lasts until its demotion, and an overlap of
// two leases acquired in that interval is a loss in Redis.
func awaitDemotion(s *redistest.Server, p *promotions, stop <-chan struct{}) string {
	back := now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if s.Role(ctx) == "slave" {
			at := now()
			p.demoted(back, at)
			return fmt.Sprintf("demoted to a replica %v after it came back", time.Duration(at-back).Round(time.Millisecond))
		}
		select {
		case <-stop:
			p.demoted(back, now())
			return "the run stopped before its demotion"
		case <-ctx.Done():
			p.demoted(back, now())
			return "not demoted within a minute"
		case <-time.After(20 * time.Millisecond):
		}
	}
}

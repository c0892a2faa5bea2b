package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// namespace prefixes every key the demo writes, so that pointing it at a
// Redis that also holds real lockwatch leases cannot touch them; the demo
// deletes its keys on exit.
const namespace = "lockwatch-demo"

// redisServer is where the demo's leases and fences live: the embedded
// server, or a real Redis given with -redis.
type redisServer struct {
	opts     *redis.Options
	embedded *miniredis.Miniredis // nil for a real Redis
	desc     string
}

// startRedis starts the embedded Redis, or checks that the one given with
// -redis answers.
//
// The embedded one is miniredis, which runs lockwatch's Lua scripts (EVALSHA
// with the NOSCRIPT fallback, TIME, GET/SET PX, PEXPIRE, PTTL, DEL, HGET,
// HSET, HMGET, redis.error_reply). By default miniredis expires keys only
// when a test moves its clock; ClockTTL makes every TTL run down with the
// wall clock instead (expired keys vanish at their next access, as in
// Redis), so leases expire in real time.
func startRedis(ctx context.Context, addr string) (*redisServer, error) {
	if addr == "" {
		mr := miniredis.NewMiniRedis()
		mr.ClockTTL(true)
		if err := mr.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("start the embedded Redis: %w", err)
		}
		return &redisServer{
			opts:     &redis.Options{Addr: mr.Addr()},
			embedded: mr,
			desc:     "embedded (miniredis) at " + mr.Addr(),
		}, nil
	}
	opts, err := redisOptions(addr)
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		return nil, fmt.Errorf("cannot reach Redis at %s: %w", opts.Addr, err)
	}
	return &redisServer{opts: opts, desc: opts.Addr + " (keys under " + namespace + ":, deleted on exit)"}, nil
}

// redisOptions reads -redis: a redis:// or rediss:// URL (go-redis's URL
// form, with its query options), or host:port.
func redisOptions(addr string) (*redis.Options, error) {
	if strings.Contains(addr, "://") {
		opts, err := redis.ParseURL(addr)
		if err != nil {
			return nil, fmt.Errorf("-redis: %w", err)
		}
		return opts, nil
	}
	return &redis.Options{Addr: addr}, nil
}

// client returns a new client on the server. ContextTimeoutEnabled makes
// context deadlines bound socket reads: what the lease package recommends
// for a Locker's client, so that a renewal against a stalled Redis ends at
// its deadline.
func (s *redisServer) client(hooks ...redis.Hook) *redis.Client {
	o := *s.opts
	o.ContextTimeoutEnabled = true
	c := redis.NewClient(&o)
	for _, h := range hooks {
		c.AddHook(h)
	}
	return c
}

// close stops the embedded server, or deletes the demo's keys from a real
// one (lease fence records would otherwise stay for their retention, and
// fenced-store marks forever).
func (s *redisServer) close() error {
	if s.embedded != nil {
		s.embedded.Close()
		return nil
	}
	c := s.client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, namespace+":*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("delete the demo's keys: %w", err)
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := c.Unlink(ctx, keys[:n]...).Err(); err != nil {
			return fmt.Errorf("delete the demo's keys: %w", err)
		}
		keys = keys[n:]
	}
	return nil
}

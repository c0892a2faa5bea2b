package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Go re-implementation of Redisson's RSemaphore (Java, not runnable
// here), written from its source (RedissonSemaphore, SemaphorePubSub) to
// send the commands it sends. The semaphore is one counter of free
// permits, set to the limit once (trySetPermits: SET NX here). Per
// acquire of one permit:
//
//   - try: one EVALSHA of a script that GETs the counter and, when it is
//     ≥ 1, DECRBYs it by 1 (Redisson's tryAcquire);
//   - when that fails: SUBSCRIBE to "redisson_sc:{<name>}", on a Pub/Sub
//     connection the instance shares among its waiters of the name
//     (subscribed while any waits, UNSUBSCRIBE after the last), then try
//     again, and after each failed try wait for a message: each message
//     (the counter after a release) wakes at most that many of the
//     instance's waiters, which all try again (no queue: every woken
//     waiter races, unfair by design);
//   - release: one EVALSHA of a script that INCRBYs the counter and
//     PUBLISHes the new value to the channel.
//
// A permit is not a lease: it has no holder, expiry nor renewal, so a
// holder that dies keeps its permit for ever (Redisson's
// RPermitExpirableSemaphore adds expiry; this is the plain RSemaphore).
var (
	redissonTry = redis.NewScript(`
local free = redis.call('GET', KEYS[1])
if free and tonumber(free) >= tonumber(ARGV[1]) then
	redis.call('DECRBY', KEYS[1], ARGV[1])
	return 1
end
return 0`)
	redissonRelease = redis.NewScript(`
local free = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PUBLISH', KEYS[2], free)
return free`)
)

// redissonSem is one instance (one Redisson client): its connections,
// its Pub/Sub connection and its waiters' entries by channel.
type redissonSem struct {
	c     *redis.Client
	ps    *redis.PubSub
	limit int
	mu    sync.Mutex
	subs  map[string]*redissonEntry
	set   sync.Map // the names whose counter this instance set
}

// redissonEntry is an instance's subscription to one channel (Redisson's
// RedissonLockEntry): how many wait on it, and the latch a message
// releases them by.
type redissonEntry struct {
	refs  int
	ready chan struct{} // closed when the SUBSCRIBE is confirmed
	once  sync.Once
	latch chan struct{} // one token per wake-up
}

// openRedisson returns an instance on addr's clients, counting into sent.
func openRedisson(b *testing.B, addr string, sent *atomic.Int64, limit int, ns string) waitLock {
	c := waitClient(b, addr, sent)
	s := &redissonSem{c: c, ps: c.Subscribe(context.Background()), limit: limit, subs: map[string]*redissonEntry{}}
	b.Cleanup(func() { _ = s.ps.Close() })
	go s.receive()
	return func(ctx context.Context, key string) (func() error, error) {
		return s.acquire(ctx, ns+"-redisson:"+key)
	}
}

func redissonChannel(name string) string { return "redisson_sc:{" + name + "}" }

// receive dispatches the Pub/Sub connection's confirmations and messages
// until it is closed.
func (s *redissonSem) receive() {
	for {
		m, err := s.ps.Receive(context.Background())
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		switch m := m.(type) {
		case *redis.Subscription:
			if e := s.subs[m.Channel]; e != nil && m.Kind == "subscribe" {
				e.once.Do(func() { close(e.ready) })
			}
		case *redis.Message:
			free, _ := strconv.Atoi(m.Payload)
			if e := s.subs[m.Channel]; e != nil {
				for range min(e.refs, free) {
					select {
					case e.latch <- struct{}{}:
					default:
					}
				}
			}
		}
		s.mu.Unlock()
	}
}

// acquire is tryAcquire(1, wakeWait): try, subscribe, try again after
// every wake-up until the wait is over.
func (s *redissonSem) acquire(ctx context.Context, name string) (func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, wakeWait)
	defer cancel()
	if _, done := s.set.LoadOrStore(name, true); !done { // trySetPermits, once
		if err := s.c.SetNX(ctx, name, s.limit, 0).Err(); err != nil {
			return nil, err
		}
	}
	release := func() error {
		return redissonRelease.Run(context.Background(), s.c, []string{name, redissonChannel(name)}, 1).Err()
	}
	if ok, err := s.try(ctx, name); ok || err != nil {
		return release, err
	}
	e, err := s.subscribe(ctx, name)
	defer s.unsubscribe(name, e)
	if err != nil {
		return nil, err
	}
	for {
		if ok, err := s.try(ctx, name); ok || err != nil {
			return release, err
		}
		select {
		case <-e.latch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (s *redissonSem) try(ctx context.Context, name string) (bool, error) {
	n, err := redissonTry.Run(ctx, s.c, []string{name}, 1).Int()
	return n == 1, err
}

// subscribe joins the instance's subscription to name's channel,
// subscribing it first if none waits, and waits for its confirmation.
func (s *redissonSem) subscribe(ctx context.Context, name string) (*redissonEntry, error) {
	ch := redissonChannel(name)
	s.mu.Lock()
	e := s.subs[ch]
	var err error
	if e == nil {
		e = &redissonEntry{ready: make(chan struct{}), latch: make(chan struct{}, 1<<16)}
		s.subs[ch] = e
		err = s.ps.Subscribe(ctx, ch)
	}
	e.refs++ // the caller's unsubscribe takes it off, also after an error
	s.mu.Unlock()
	if err != nil {
		return e, err
	}
	select {
	case <-e.ready:
		return e, nil
	case <-ctx.Done():
		return e, context.Cause(ctx)
	}
}

// unsubscribe leaves e, and unsubscribes name's channel after the last
// waiter.
func (s *redissonSem) unsubscribe(name string, e *redissonEntry) {
	ch := redissonChannel(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.refs--; e.refs > 0 || s.subs[ch] != e {
		return
	}
	delete(s.subs, ch)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.ps.Unsubscribe(ctx, ch)
}

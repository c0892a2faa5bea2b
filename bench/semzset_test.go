package bench

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Go re-implementation of the Node library redis-semaphore's Semaphore
// (swarthy/redis-semaphore, not runnable here), written from its source
// (src/semaphore/acquire, refresh, release; src/misc.ts) to send the
// commands it sends, with its defaults: lockTimeout 10 s, retryInterval
// 10 ms, refreshInterval 0.8 × lockTimeout. The semaphore is a sorted set
// of holders, each a random identifier scored by the time it acquired or
// last refreshed (the client's clock, in ms). Per acquire:
//
//   - one EVALSHA of a script that ZREMRANGEBYSCOREs the holders older
//     than lockTimeout, and when ZCARD < limit ZADDs the caller at now
//     and PEXPIREs the set by lockTimeout;
//   - after each failed try, a sleep of retryInterval and another try
//     (no queue, no wake-up: polling), until acquireTimeout (10 s by
//     default; wakeWait here, as for every library of these benchmarks);
//   - while held, every refreshInterval an EVALSHA of a script that does
//     the same clean-up and, when the caller is still in the set
//     (ZSCORE), ZADDs it at now and PEXPIREs the set;
//   - release: one ZREM of the caller.
var (
	zsetAcquire = redis.NewScript(`
local limit, id, timeout, now = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - timeout)
if redis.call('ZCARD', KEYS[1]) >= limit then
	return 0
end
redis.call('ZADD', KEYS[1], now, id)
redis.call('PEXPIRE', KEYS[1], timeout)
return 1`)
	zsetRefresh = redis.NewScript(`
local id, timeout, now = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - timeout)
if not redis.call('ZSCORE', KEYS[1], id) then
	return 0
end
redis.call('ZADD', KEYS[1], now, id)
redis.call('PEXPIRE', KEYS[1], timeout)
return 1`)
)

// The library's defaults (src/misc.ts).
const (
	zsetLockTimeout   = 10 * time.Second
	zsetRetryInterval = 10 * time.Millisecond
	zsetRefresh08     = zsetLockTimeout * 8 / 10
)

// openZset returns an instance on addr's clients, counting into sent.
func openZset(b *testing.B, addr string, sent *atomic.Int64, limit int, ns string) waitLock {
	c := waitClient(b, addr, sent)
	return func(ctx context.Context, key string) (func() error, error) {
		return zsetAcquireWait(ctx, c, ns+"-redis-semaphore:"+key, limit)
	}
}

// zsetAcquireWait polls until it holds a place in key's set, and returns
// its release.
func zsetAcquireWait(ctx context.Context, c *redis.Client, key string, limit int) (func() error, error) {
	id := rand.Text() // the library: crypto.randomUUID()
	args := func() []any {
		return []any{limit, id, zsetLockTimeout.Milliseconds(), time.Now().UnixMilli()}
	}
	end := time.Now().Add(wakeWait)
	for {
		n, err := zsetAcquire.Run(ctx, c, []string{key}, args()...).Int()
		switch {
		case err != nil:
			return nil, err
		case n == 1:
			stop := make(chan struct{})
			go zsetRefreshing(c, key, args, stop)
			return func() error {
				close(stop)
				return c.ZRem(context.Background(), key, id).Err()
			}, nil
		case time.Now().After(end):
			return nil, context.DeadlineExceeded
		}
		select {
		case <-time.After(zsetRetryInterval):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// zsetRefreshing refreshes the caller's place every refreshInterval until
// stop is closed, as the library's setInterval does.
func zsetRefreshing(c *redis.Client, key string, args func() []any, stop chan struct{}) {
	t := time.NewTicker(zsetRefresh08)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = zsetRefresh.Run(context.Background(), c, []string{key}, args()...).Err()
		}
	}
}

package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// cycleTTL is the TTL of every lock in the cycle benchmarks: lockwatch's
// default, long enough that no renewal runs during a cycle.
const cycleTTL = 10 * time.Second

// errContended is what a cycle returns when another goroutine held the key:
// counted, not a failure.
var errContended = errors.New("contended")

// locker is one implementation under test: cycle takes the lock on key and
// releases it, or returns errContended.
type locker struct {
	name  string
	cycle func(ctx context.Context, key string) error
}

// rawRelease is the compare-and-delete every Redis lock releases with.
var rawRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// fencedScripts are lockwatch's own acquire and release scripts, read from
// the lease package's source, for the fenced floor.
func fencedScripts(b *testing.B) (acquire, release *redis.Script) {
	load := func(files ...string) *redis.Script {
		var src []byte
		for _, f := range files { // as lease puts them together
			part, err := os.ReadFile("../lease/scripts/" + f)
			if err != nil {
				b.Fatal(err)
			}
			src = append(src, part...)
		}
		return redis.NewScript(string(src))
	}
	return load("record.lua", "acquire.lua"), load("record.lua", "release.lua")
}

// lockers returns the implementations, all on client c (rueidislock on a
// client of its own), their round trips counted by rt: the raw floor
// first, the fenced floor (lockwatch's acquire and release scripts called
// through go-redis alone: what fencing costs in Redis, without lockwatch's
// client),
// then lockwatch with telemetry off (releasing with Release, and with
// ReleaseAsync) and on, redislock, redsync and rueidislock.
func lockers(b *testing.B, c *redis.Client, rt *roundTrips, ns string) []locker {
	fencedAcquire, fencedRelease := fencedScripts(b)
	off := lease.NewLocker(c, lease.Config{Namespace: ns + "-off", TTL: cycleTTL, Telemetry: telemetryOff()})
	tel, sampled := telemetryOn(b)
	on := lease.NewLocker(c, lease.Config{Namespace: ns + "-on", TTL: cycleTTL, Telemetry: tel})
	b.Cleanup(func() { _ = off.Close(); _ = on.Close() })
	lockwatch := func(lk *lease.Locker, ctx context.Context, async bool) func(context.Context, string) error {
		return func(_ context.Context, key string) error {
			l, err := lk.Acquire(ctx, key)
			if errors.Is(err, lease.ErrNotAcquired) {
				return errContended
			} else if err != nil {
				return err
			}
			if async {
				l.ReleaseAsync(ctx)
				return nil
			}
			return l.Release(ctx)
		}
	}
	rl := redislock.New(c)
	rs := redsync.New(goredis.NewPool(c))
	rue := rueidisCycleLocker(b, ns, rt)
	return []locker{
		{"raw", func(ctx context.Context, key string) error {
			key = ns + "-raw:" + key
			owner := rand.Text()
			ok, err := c.SetNX(ctx, key, owner, cycleTTL).Result()
			if err != nil {
				return err
			} else if !ok {
				return errContended
			}
			return rawRelease.Run(ctx, c, []string{key}, owner).Err()
		}},
		{"raw-fenced", func(ctx context.Context, key string) error {
			key = ns + "-raw-fenced:{" + key + "}"
			keys, owner := []string{key + ":l", key + ":f", key + ":w"}, rand.Text()
			args := []any{owner, cycleTTL.Milliseconds(), time.Hour.Milliseconds(), 0}
			r, err := fencedAcquire.Run(ctx, c, keys, args...).Slice() // contended: {0, pttl, replica}
			if err != nil {
				return err
			} else if r[0] != int64(1) {
				return errContended
			}
			return fencedRelease.Run(ctx, c, keys, args...).Err()
		}},
		{"lockwatch-off", lockwatch(off, context.Background(), false)},
		{"lockwatch-async", lockwatch(off, context.Background(), true)},
		{"lockwatch-on", lockwatch(on, sampled, false)},
		{"redislock", func(ctx context.Context, key string) error {
			l, err := rl.Obtain(ctx, ns+"-redislock:"+key, cycleTTL, nil)
			if errors.Is(err, redislock.ErrNotObtained) {
				return errContended
			} else if err != nil {
				return err
			}
			return l.Release(ctx)
		}},
		{"redsync", func(ctx context.Context, key string) error {
			m := rs.NewMutex(ns+"-redsync:"+key, redsync.WithTries(1), redsync.WithExpiry(cycleTTL))
			err := m.LockContext(ctx)
			var taken *redsync.ErrTaken
			if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
				return errContended
			} else if err != nil {
				return err
			}
			_, err = m.UnlockContext(ctx)
			return err
		}},
		{"rueidislock", func(ctx context.Context, key string) error {
			_, release, err := rue.TryWithContext(ctx, key)
			if errors.Is(err, rueidislock.ErrNotLocked) {
				return errContended
			} else if err != nil {
				return err
			}
			release() // returns once the key is deleted
			return nil
		}},
	}
}

// rueidisCycleLocker is rueidislock on the shared server with one key per
// lock (KeyMajority 1, like every other implementation here; its default
// takes 2 of 3) and the cycle's TTL, on a rueidis client of its own with
// its defaults. rt counts its commands (rueidis pipelines them itself, so
// its rtt/op is commands per op).
func rueidisCycleLocker(b *testing.B, ns string, rt *roundTrips) rueidislock.Locker {
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		KeyPrefix:    ns + "-rueidislock",
		KeyMajority:  1,
		KeyValidity:  cycleTTL,
		ClientOption: rueidis.ClientOption{InitAddress: []string{sharedAddr}},
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return countedRueidis{c, &rt.n}, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(lk.Close)
	return lk
}

// BenchmarkCycle measures one acquire + release of every implementation on
// the shared redis-server: from one goroutine, and from 16 goroutines on
// a key each (unique) or all on one key (contended, where an attempt that
// finds the key held counts as one op and in contended/op). A PING from
// the same client is the floor of a round trip. rtt/op is the Redis round
// trips per op as the client sent them (a pipeline counts once).
// single/interleaved runs every implementation once per iteration and
// reports each one's time per cycle.
func BenchmarkCycle(b *testing.B) {
	loopbackOnly(b, sharedAddr)
	c, rt := counted(b, sharedAddr)
	ctx := context.Background()
	ns := "cycle" + strconv.FormatInt(time.Now().UnixNano(), 36)
	impls := lockers(b, c, rt, ns)

	b.Run("single/ping", func(b *testing.B) {
		measure(b, rt, func() {
			for b.Loop() {
				if err := c.Ping(ctx).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("parallel16/ping", func(b *testing.B) {
		parallel16(b)
		measure(b, rt, func() {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Ping(ctx).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	})
	for _, impl := range impls {
		b.Run("single/unique/"+impl.name, func(b *testing.B) {
			measure(b, rt, func() {
				for b.Loop() {
					if err := impl.cycle(ctx, "single"); err != nil {
						b.Fatal(err) // alone on its key: contention is a bug
					}
				}
			})
		})
	}
	b.Run("single/interleaved", func(b *testing.B) {
		// Every iteration runs one cycle of each implementation, in an order
		// that rotates, and times each: the ratios compare cycles made
		// microseconds apart, so a slow phase of this shared machine weighs
		// on all of them alike, unlike sub-benchmarks run seconds apart.
		spent := make([]time.Duration, len(impls))
		for i := 0; b.Loop(); i++ {
			for j := range impls {
				k := (i + j) % len(impls)
				start := time.Now()
				if err := impls[k].cycle(ctx, "interleaved"); err != nil {
					b.Fatal(err)
				}
				spent[k] += time.Since(start)
			}
		}
		for k, impl := range impls {
			b.ReportMetric(float64(spent[k].Nanoseconds())/float64(max(b.N, 1)), impl.name+"-ns/cycle")
		}
	})
	for _, contended := range []bool{false, true} {
		mode := "unique"
		if contended {
			mode = "contended"
		}
		for _, impl := range impls {
			b.Run("parallel16/"+mode+"/"+impl.name, func(b *testing.B) {
				var worker, lost atomic.Int64
				parallel16(b)
				measure(b, rt, func() {
					b.RunParallel(func(pb *testing.PB) {
						key := "p16-" + mode
						if !contended {
							key += "-" + strconv.FormatInt(worker.Add(1), 10)
						}
						for pb.Next() {
							err := impl.cycle(ctx, key)
							switch {
							case errors.Is(err, errContended) && contended:
								lost.Add(1)
							case err != nil:
								b.Error(err)
								return
							}
						}
					})
				})
				if contended {
					b.ReportMetric(float64(lost.Load())/float64(max(b.N, 1)), "contended/op")
				}
			})
		}
	}
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clientConfig is one way a user sets up the go-redis client that every
// implementation in BenchmarkClients shares.
type clientConfig struct {
	name     string
	poolSize int // 0: go-redis's default (10 per GOMAXPROCS)
	timeouts bool
}

var clientConfigs = []clientConfig{
	{"pool=default,timeouts=on", 0, true},
	{"pool=default,timeouts=off", 0, false},
	{"pool=64,timeouts=on", 64, true},
	{"pool=64,timeouts=off", 64, false},
}

// clientImpls are the implementations BenchmarkClients compares: the raw
// floor and redislock (the goals' baselines), lockwatch releasing with
// Release and with ReleaseAsync.
var clientImpls = []string{"raw", "lockwatch-off", "lockwatch-async", "redislock"}

// BenchmarkClients runs the cycle of BenchmarkCycle (acquire, then
// release) from 16 goroutines in every client configuration a user may
// pick: go-redis's default pool or PoolSize 64, ContextTimeoutEnabled on
// or off, each on a client of its own; and with a fresh key per op (every
// key new: a fence record of one bar) or one key per goroutine reused by
// every op (its record keeps the 16 newest released tokens barred). Names:
// <config>/<keys>/<implementation>. It reports what BenchmarkCycle does,
// CPU per op included.
func BenchmarkClients(b *testing.B) {
	loopbackOnly(b, sharedAddr)
	for _, cfg := range clientConfigs {
		c := redis.NewClient(&redis.Options{Addr: sharedAddr, PoolSize: cfg.poolSize, ContextTimeoutEnabled: cfg.timeouts})
		b.Cleanup(func() { _ = c.Close() })
		rt := &roundTrips{}
		c.AddHook(rt)
		if err := c.Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
		ns := "clients" + strconv.FormatInt(time.Now().UnixNano(), 36)
		impls := slices.DeleteFunc(lockers(b, c, rt, ns), func(l locker) bool { return !slices.Contains(clientImpls, l.name) })
		for _, fresh := range []bool{true, false} {
			keys := "reused"
			if fresh {
				keys = "fresh"
			}
			for _, impl := range impls {
				b.Run(cfg.name+"/"+keys+"/"+impl.name, func(b *testing.B) {
					var worker atomic.Int64
					parallel16(b)
					measure(b, rt, func() {
						b.RunParallel(func(pb *testing.PB) {
							w := worker.Add(1)
							for i := 0; pb.Next(); i++ {
								key := fmt.Sprintf("w%d", w)
								if fresh {
									key = fmt.Sprintf("w%d-%d", w, i)
								}
								if err := impl.cycle(context.Background(), key); err != nil {
									if errors.Is(err, errContended) {
										err = fmt.Errorf("%s: contended on a key of its own", key)
									}
									b.Error(err)
									return
								}
							}
						})
					})
				})
			}
		}
	}
}

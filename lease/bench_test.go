package lease

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/lockwatch/lockwatch/internal/redistest"
)

// BenchmarkAcquireRelease measures one acquire + release cycle on a private
// loopback redis-server, alone and from 16 goroutines on distinct keys, with
// a PING round trip as the floor to compare against.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client(b)
	ctx := context.Background()
	lk := newLocker(b, c)

	b.Run("ping", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	cycle := func(b *testing.B, key string) {
		l, err := lk.Acquire(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("single", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cycle(b, "bench")
		}
	})
	b.Run("parallel16", func(b *testing.B) {
		b.ReportAllocs()
		var worker atomic.Int64
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines
		b.RunParallel(func(pb *testing.PB) {
			key := "bench-" + strconv.FormatInt(worker.Add(1), 10)
			for pb.Next() {
				cycle(b, key)
			}
		})
	})
}

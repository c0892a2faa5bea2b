package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuardedRegisterOrder proves the guarded register's check can fail:
// A is admitted with token 41 on PUT and holds back the rest of its body;
// B comes with 42 through another entry point. With a Guard per entry
// point (each its own lock table, the defect of one HTTPGuard per route)
// B's write lands first and A's after it: the accept log is out of fence
// order, and the run's checks count a stale write accepted, which
// linearizability alone would miss (the two writes overlap, and the
// register is never read). With one Guard, B waits for A and the log is
// in order.
func TestGuardedRegisterOrder(t *testing.T) {
	srv := redistest.Start(t)
	store := fence.NewRedisStore(srv.Client(t), resourceGuard, fence.RedisConfig{Namespace: "chaos-guard-test", LockNamespace: lockNamespace})
	i := 0
	for _, separate := range []bool{true, false} {
		for _, via := range []string{viaPost, viaUnary, viaStream} {
			i++
			key := fmt.Sprintf("k%d", i)
			name := fmt.Sprintf("one guard/B via %s", via)
			if separate {
				name = fmt.Sprintf("a guard per entry point/B via %s", via)
			}
			t.Run(name, func(t *testing.T) {
				one := middleware.NewGuard(store, middleware.GuardConfig{})
				guard := func() *middleware.Guard { return one }
				if separate {
					guard = func() *middleware.Guard { return middleware.NewGuard(store, middleware.GuardConfig{}) }
				}
				reg := newGuardedRegister()
				gs, err := serveGuarded(reg, guard)
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, gs.close()) })
				gc, err := newGuardClient(gs.addrs)
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, gc.close()) })

				halfSent, release := make(chan struct{}), make(chan struct{})
				releaseA := sync.OnceFunc(func() { close(release) })
				t.Cleanup(releaseA) // before the servers close, on a failure too
				write := func(o op, midway func()) <-chan op {
					done := make(chan op, 1)
					go func() {
						o.Invoke = now()
						gc.write(context.Background(), &o, midway)
						o.Return = now()
						done <- o
					}()
					return done
				}
				aDone := write(op{Holder: "A", Kind: kindWrite, Key: key, Reg: regGuard, Fence: 41, Token: fence.Mint(lockNamespace, key, 41, nil),
					Value: "written by A", Via: viaPut, Slow: 10 * time.Millisecond}, func() { close(halfSent); <-release })
				<-halfSent
				require.Eventually(t, func() bool {
					_, mark, _ := store.Read(context.Background(), key)
					return mark == 41
				}, 5*time.Second, 5*time.Millisecond, "A was never admitted")
				bDone := write(op{Holder: "B", Kind: kindWrite, Key: key, Reg: regGuard, Fence: 42, Token: fence.Mint(lockNamespace, key, 42, nil),
					Value: "written by B", Via: via},
					func() {})
				var a, b op
				if separate {
					select {
					case b = <-bDone:
					case <-time.After(5 * time.Second):
						t.Fatal("B did not finish while A held back its body")
					}
				} else {
					assert.Never(t, func() bool { return len(bDone) > 0 }, 200*time.Millisecond, 5*time.Millisecond,
						"B was handled while A, admitted first, was unfinished")
				}
				releaseA()
				a = <-aDone
				if !separate {
					b = <-bDone
				}
				assert.Equal(t, outOK, a.Outcome, a.Err)
				assert.Equal(t, outOK, b.Outcome, b.Err)

				bad, values := acceptOrder(regGuard, reg.accepted())
				logs := map[string][]acceptEntry{regGuard: reg.accepted()}
				sum := analyse(config{ttl: time.Second}, []op{a, b}, nil, nil, nil, nil, counts{}, logs, "", nil)
				if separate {
					assert.Len(t, bad, 1)
					assert.Equal(t, []string{"written by A"}, values)
					assert.Equal(t, 1, sum.StaleAccepted)
					assert.Equal(t, 1, sum.OrderViolations)
					assert.Equal(t, 1, sum.Guard.OutOfOrder)
					assert.Equal(t, "ok", sum.Linearizable, "the accept log, not porcupine, catches this one")
				} else {
					assert.Empty(t, bad)
					assert.Zero(t, sum.StaleAccepted)
					assert.Zero(t, sum.OrderViolations)
					assert.Empty(t, sum.Violations)
				}
				assert.Equal(t, 2, sum.Guard.Accepted)
			})
		}
	}
}

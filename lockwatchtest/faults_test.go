package lockwatchtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockwatch/lockwatch/lockwatchtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// cfg is the leases' Config in these tests: a short TTL keeps the waits
// for a renewal short, and a namespace of their own is followed by every
// fault.
var cfg = lease.Config{TTL: 2 * time.Second, Namespace: "kit-test"}

// awaitLoss waits for l's loss and returns its cause.
func awaitLoss(t *testing.T, l *lease.Lease) error {
	select {
	case <-l.Context().Done():
		return context.Cause(l.Context())
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost")
		return nil
	}
}

// target is where the four faults are made: the kit, or a real
// redis-server behind a proxy that drops replies.
type target struct {
	locker        *lease.Locker
	client        *redis.Client // the fenced store's
	contend       func(key string)
	dropNextReply func(key string)
	heal          func() // after the dropped reply
	lose          func(key string)
	newerToken    func(key string) fence.Token
}

func kitTarget(t *testing.T) target {
	srv := lockwatchtest.New(t, cfg)
	return target{
		locker: srv.Locker(), client: srv.Client(),
		contend:       func(key string) { srv.Contend(key) },
		dropNextReply: srv.DropNextReply, heal: func() {},
		lose: srv.Lose, newerToken: srv.NewerToken,
	}
}

// realTarget makes the same faults on a redis-server by hand: another
// Locker's lease, a proxy dropping every reply, a DEL, a minted token.
func realTarget(t *testing.T) target {
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr())
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true})
	direct := srv.Client(t)
	locker, other := lease.NewLocker(client, cfg), lease.NewLocker(direct, cfg)
	t.Cleanup(func() { _ = locker.Close(); _ = other.Close(); _ = client.Close() })
	ctx := context.Background()
	return target{
		locker: locker, client: client,
		contend: func(key string) {
			l, err := other.Acquire(ctx, key)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Release(ctx) })
		},
		dropNextReply: func(string) { proxy.Set(faultproxy.DropReplies) },
		heal:          func() { proxy.Set(faultproxy.Pass) },
		lose: func(key string) {
			_, err := srv.Do(ctx, "DEL", leasekeys.Of(cfg.Namespace, key).Lock)
			require.NoError(t, err)
		},
		newerToken: func(key string) fence.Token {
			info, err := other.Inspect(ctx, key)
			require.NoError(t, err)
			return fence.Mint(cfg.Namespace, key, info.Fence+1, nil)
		},
	}
}

// shape names what errors.Is and errors.As find in err: what the code
// under test can branch on.
func shape(err error) string {
	var parts []string
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrNotAcquired", lease.ErrNotAcquired}, {"ErrUnknown", lease.ErrUnknown},
		{"ErrLost", lease.ErrLost}, {"ErrStale", fence.ErrStale},
		{"DeadlineExceeded", context.DeadlineExceeded}, {"Canceled", context.Canceled},
	} {
		if errors.Is(err, s.err) {
			parts = append(parts, s.name)
		}
	}
	var na *lease.NotAcquiredError
	if errors.As(err, &na) && na.HolderTTL > 0 {
		parts = append(parts, "NotAcquiredError with HolderTTL")
	}
	var lost *lease.LostError
	if errors.As(err, &lost) {
		parts = append(parts, fmt.Sprintf("LostError(%s)", lost.Reason))
	}
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		parts = append(parts, "StaleError")
	}
	return strings.Join(parts, " ")
}

// faults makes each fault on tg and returns the shape of what the code
// under test meets, by fault.
func faults(t *testing.T, tg target) map[string]string {
	ctx := context.Background()
	seen := map[string]string{}

	tg.contend("contended")
	_, err := tg.locker.Acquire(ctx, "contended")
	seen["contended"] = shape(err)

	tg.dropNextReply("unknown")
	_, err = tg.locker.Acquire(ctx, "unknown")
	tg.heal()
	seen["unknown"] = shape(err)
	// The unknown acquire took the key (its fence is minted); the Locker
	// frees it behind it.
	info, err := tg.locker.Inspect(ctx, "unknown")
	require.NoError(t, err)
	seen["unknown ran"] = fmt.Sprint(info.Fence > 0)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		l, err := tg.locker.Acquire(ctx, "unknown")
		if assert.NoError(c, err) {
			_ = l.Release(ctx)
		}
	}, 10*time.Second, 50*time.Millisecond)

	l, err := tg.locker.Acquire(ctx, "lost")
	require.NoError(t, err)
	tg.lose("lost")
	seen["lost"] = shape(awaitLoss(t, l))
	seen["lost commit"] = shape(l.Commit(ctx, func(context.Context, fence.Token) error { return nil }))
	_ = l.Release(ctx)

	seen["stale"] = staleWrite(t, tg)
	return seen
}

// staleWrite writes under a held lease after a newer token has written.
func staleWrite(t *testing.T, tg target) string {
	ctx := context.Background()
	store := fence.NewRedisStore(tg.client, "kit-test-store", fence.RedisConfig{LockNamespace: cfg.Namespace})
	l, err := tg.locker.Acquire(ctx, "stale")
	require.NoError(t, err)
	defer l.Release(ctx)
	require.NoError(t, store.Write(ctx, "stale", tg.newerToken("stale"), []byte("next holder's")))
	err = l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
		return store.Write(ctx, "stale", token, []byte("late"))
	})
	require.NoError(t, l.Err(), "the lease itself is still held")
	return shape(err)
}

// TestFaults: the code under test meets each fault as Server's doc
// comments say, and meets the same errors and causes on a redis-server
// where the network drops the reply.
func TestFaults(t *testing.T) {
	t.Parallel()
	kit := faults(t, kitTarget(t))
	assert.Equal(t, map[string]string{
		"contended":   "ErrNotAcquired NotAcquiredError with HolderTTL",
		"unknown":     "ErrUnknown DeadlineExceeded",
		"unknown ran": "true",
		"lost":        "ErrLost LostError(renewal_rejected)",
		"lost commit": "ErrLost LostError(renewal_rejected)",
		"stale":       "ErrStale StaleError",
	}, kit)
	t.Run("AsOnARealRedis", func(t *testing.T) {
		assert.Equal(t, faults(t, realTarget(t)), kit)
	})
}

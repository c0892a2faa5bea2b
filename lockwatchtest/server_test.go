package lockwatchtest_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/lockwatchtest"
)

// TestStopsAtTheEndOfTheTest: a lease still held ends with LossClosed,
// and the server no longer answers (goleak, in TestMain, finds any
// goroutine left).
func TestStopsAtTheEndOfTheTest(t *testing.T) {
	var l *lease.Lease
	var addr string
	t.Run("test", func(t *testing.T) {
		srv := lockwatchtest.New(t, lease.Config{})
		var err error
		l, err = srv.Locker().Acquire(context.Background(), "k")
		require.NoError(t, err)
		addr = srv.Client().Options().Addr
	})
	var lost *lease.LostError
	require.ErrorAs(t, context.Cause(l.Context()), &lost)
	assert.Equal(t, lease.LossClosed, lost.Reason)
	_, err := net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the embedded Redis is stopped")
}

// TestKeysExpireWithTheWallClock: nobody moves the embedded Redis's clock.
func TestKeysExpireWithTheWallClock(t *testing.T) {
	t.Parallel()
	srv := lockwatchtest.New(t, lease.Config{})
	ctx := context.Background()
	require.NoError(t, srv.Client().Set(ctx, "k", "v", 100*time.Millisecond).Err())
	require.Eventually(t, func() bool { return srv.Client().Exists(ctx, "k").Val() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestDropNextReplyRunsTheCommand: the command takes effect, its caller
// waits out its deadline, and the next command is answered.
func TestDropNextReplyRunsTheCommand(t *testing.T) {
	t.Parallel()
	srv := lockwatchtest.New(t, lease.Config{})
	lockKey := leasekeys.Of("lockwatch", "k").Lock
	srv.DropNextReply("k")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := srv.Client().Set(ctx, lockKey, "v", 0).Err()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	v, err := srv.Client().Get(context.Background(), lockKey).Result()
	require.NoError(t, err)
	assert.Equal(t, "v", v)
}

// TestDropNextReplyOfARenewal: a held lease whose renewal's reply is lost
// is lost with LossRenewalUnknown.
func TestDropNextReplyOfARenewal(t *testing.T) {
	t.Parallel()
	srv := lockwatchtest.New(t, cfg)
	l, err := srv.Locker().Acquire(context.Background(), "k")
	require.NoError(t, err)
	defer l.Release(context.Background())
	srv.DropNextReply("k")
	var lost *lease.LostError
	require.ErrorAs(t, awaitLoss(t, l), &lost)
	assert.Equal(t, lease.LossRenewalUnknown, lost.Reason)
}

// TestContendReleases: once released, the key is the code under test's.
func TestContendReleases(t *testing.T) {
	srv := lockwatchtest.New(t, cfg)
	ctx := context.Background()
	release := srv.Contend("k")
	_, err := srv.Locker().Acquire(ctx, "k")
	require.ErrorIs(t, err, lease.ErrNotAcquired)
	release()
	l, err := srv.Locker().Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// TestNewerTokenIsSigned: with Secrets, a store holding the same secrets
// takes the token and rejects the holder's next write as stale.
func TestNewerTokenIsSigned(t *testing.T) {
	secrets, err := fence.NewSecrets("k1", map[string][]byte{"k1": []byte("0123456789abcdef0123456789abcdef")})
	require.NoError(t, err)
	srv := lockwatchtest.New(t, lease.Config{Secrets: secrets})
	ctx := context.Background()
	store := fence.NewRedisStore(srv.Client(), "orders", fence.RedisConfig{Secrets: secrets})
	l, err := srv.Locker().Acquire(ctx, "order:1")
	require.NoError(t, err)
	defer l.Release(ctx)
	require.NoError(t, store.Write(ctx, "order:1", srv.NewerToken("order:1"), []byte("next")))
	require.ErrorIs(t, store.Write(ctx, "order:1", l.Token(), []byte("late")), fence.ErrStale)
}

// fatalTB records a Fatalf and ends its goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs fn on a fatalTB and returns the test failure it reported.
func fatal(t *testing.T, fn func(tb testing.TB)) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb.fatal
}

// TestMisuseFailsTheTest: Contend of a held key and Lose of a free one
// fail the test, naming the key.
func TestMisuseFailsTheTest(t *testing.T) {
	t.Parallel()
	assert.Contains(t, fatal(t, func(tb testing.TB) {
		srv := lockwatchtest.New(tb, cfg)
		srv.Contend("held")
		srv.Contend("held")
	}), `contend "held"`)
	assert.Contains(t, fatal(t, func(tb testing.TB) {
		lockwatchtest.New(tb, cfg).Lose("free")
	}), `lose "free": no lease holds it`)
}

// TestContendWaitsForARelease: a key the code under test releases in the
// background, as the middleware does, is contended once it is free.
func TestContendWaitsForARelease(t *testing.T) {
	t.Parallel()
	srv := lockwatchtest.New(t, cfg)
	l, err := srv.Locker().Acquire(context.Background(), "k")
	require.NoError(t, err)
	l.ReleaseAsync(context.Background())
	srv.Contend("k")
	_, err = srv.Locker().Acquire(context.Background(), "k")
	require.ErrorIs(t, err, lease.ErrNotAcquired)
}

// TestNewerTokenLeavesTheLeaseHeld: NewerToken records nothing in Redis,
// so the holder's renewals go on and only its write meets the newer
// token; each call is newer than the last, and than the holder's fence.
func TestNewerTokenLeavesTheLeaseHeld(t *testing.T) {
	srv := lockwatchtest.New(t, lease.Config{TTL: time.Second})
	ctx := context.Background()
	l, err := srv.Locker().Acquire(ctx, "order:2")
	require.NoError(t, err)
	defer l.Release(ctx)
	first := srv.NewerToken("order:2")
	second := srv.NewerToken("order:2")
	assert.Greater(t, first.Fence, l.Fence())
	assert.Greater(t, second.Fence, first.Fence, "a second next holder")

	require.Eventually(t, func() bool { // renewals every TTL/3, confirmed
		s := srv.Locker().Snapshot()
		return len(s.Leases) == 1 && s.Leases[0].Renewals >= 2
	}, 10*time.Second, 10*time.Millisecond, "the holder's renewals go on")
	require.NoError(t, l.Err())
	info, err := srv.Locker().Inspect(ctx, "order:2")
	require.NoError(t, err)
	assert.Equal(t, l.Fence(), info.Fence, "nothing recorded in Redis")
}

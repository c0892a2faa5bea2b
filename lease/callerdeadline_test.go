package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/groupcommit"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// unfired is a caller's context in the instant after its deadline passed
// and before its timer fired: the deadline is there, Done has not closed.
type unfired struct {
	context.Context
	deadline time.Time
}

func (c unfired) Deadline() (time.Time, bool) { return c.deadline, true }

// TestCallersDeadlineInTheQueueIsTheCause: an acquire dropped from the
// queue because the caller's deadline passed says so with
// context.DeadlineExceeded, whichever timer noticed first.
func TestCallersDeadlineInTheQueueIsTheCause(t *testing.T) {
	lk, counter, _ := slowLocker(t, 100*time.Millisecond, Config{})
	ctx := testCtx(t)
	first := fillPipe(ctx, t, lk)
	r := <-acquireAsync(unfired{ctx, time.Now().Add(20 * time.Millisecond)}, lk, "queued")
	require.ErrorIs(t, r.err, context.DeadlineExceeded)
	require.NotErrorIs(t, r.err, ErrUnknown, "it never left the queue")
	requireAcquired(t, first)
	assert.Equal(t, int64(groupcommit.MaxInFlight), counter.cmds.Load(), "the dropped call was not sent")
}

// TestWaitEndedByTheCallersDeadlineIsContended: a wait whose caller's
// deadline passes while its refresh would queue ends as one that ends in
// a sleep: not acquired, the deadline the cause.
func TestWaitEndedByTheCallersDeadlineIsContended(t *testing.T) {
	c := redistest.Start(t).Client(t)
	late := &lateReply{}
	c.AddHook(late.hook())
	o, tel := observe(t)
	lk := newLocker(t, c, Config{Telemetry: tel})
	ctx := testCtx(t)
	holder, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)

	deadline := time.Now().Add(50 * time.Millisecond)
	late.until.Store(deadline.Add(10 * time.Millisecond).UnixNano()) // the first answer comes after the deadline
	_, err = with(t, lk, Config{Wait: 10 * time.Second}).Acquire(unfired{ctx, deadline}, "k")
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrUnknown)
	result, attempts := o.lastAcquire(t)
	assert.Equal(t, obs.AcquireContended, result)
	assert.EqualValues(t, 1, attempts, "one attempt, answered queued; its refresh dropped unsent")
	require.NoError(t, holder.Release(ctx))
}

// lateReply holds the first reply read after it is armed until the
// instant in until (Unix nanoseconds).
type lateReply struct{ until atomic.Int64 }

func (h *lateReply) hook() hookFunc {
	return func(_ []redis.Cmder, send func() error) error {
		defer func() {
			if u := h.until.Swap(0); u != 0 {
				time.Sleep(time.Until(time.Unix(0, u)))
			}
		}()
		return send()
	}
}

// TestAWaitsAttemptExpiredInTheQueueIsAFailure: an attempt of a wait that
// the acquire timeout drops in the queue (Redis congested), not the
// caller's deadline, is a failure, not contention: an HTTP caller must
// get 503 LEASE_UNAVAILABLE, not 409 with the holder's TTL.
func TestAWaitsAttemptExpiredInTheQueueIsAFailure(t *testing.T) {
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 8})
	t.Cleanup(func() { _ = c.Close() })
	o, tel := observe(t)
	lk := newLocker(t, c, Config{Telemetry: tel})
	ctx := testCtx(t)
	holder, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)

	lockKey, _ := redisKeys(lk.set.Namespace, "k")
	held := &holdReply{key: lockKey, inHook: make(chan struct{}), release: make(chan struct{})}
	held.armed.Store(true)
	c.AddHook(held.hook())
	waiting := with(t, lk, Config{Wait: 5 * time.Second, AcquireTimeout: 500 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := waiting.Acquire(ctx, "k")
		done <- err
	}()
	<-held.inHook // the first attempt was answered contended
	proxy.Set(faultproxy.Delay(1500 * time.Millisecond))
	f1, f2 := acquireAsync(ctx, lk, "fill1"), acquireAsync(ctx, lk, "fill2")
	waitPipe(t, lk, 2, 1) // the held attempt and fill1 in flight, fill2 queued: it takes the held one's slot
	close(held.release)
	err = <-done
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNotAcquired, "congestion reported as contention")
	assert.Contains(t, err.Error(), "acquire timeout (500ms) passed before the acquire could be sent")
	result, _ := o.lastAcquire(t)
	assert.Equal(t, obs.AcquireError, result)
	<-f1
	<-f2
	proxy.Set(faultproxy.Delay(0))
	require.NoError(t, holder.Release(ctx))
}

// holdReply holds the caller of the first command naming key, once its
// reply is in, until release is closed.
type holdReply struct {
	key     string
	armed   atomic.Bool
	inHook  chan struct{}
	release chan struct{}
}

func (h *holdReply) hook() hookFunc {
	return func(cmds []redis.Cmder, send func() error) error {
		err := send()
		for _, cmd := range cmds {
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok && s == h.key && h.armed.CompareAndSwap(true, false) {
					close(h.inHook)
					<-h.release
				}
			}
		}
		return err
	}
}

package election

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	assert.Equal(t, time.Second, c.Pause)
	assert.Equal(t, "lockwatch", c.Namespace)
	assert.NotEmpty(t, c.Identity)
	assert.Zero(t, Config{Pause: -1}.withDefaults().Pause, "negative: no pause")
	assert.Equal(t, time.Minute, Config{Pause: time.Minute}.withDefaults().Pause)
}

// newElection returns an Election on a private server, its record expiring
// after recordTTL.
func newElection(t *testing.T, ttl time.Duration) (*Election, *redis.Client) {
	srv := redistest.Start(t)
	c := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	lk := lease.NewLocker(c, lease.Config{TTL: time.Second})
	t.Cleanup(func() { _ = lk.Close() })
	e, err := New(lk, c, "k", Config{Identity: "me"})
	require.NoError(t, err)
	e.recordTTL = ttl
	return e, c
}

// A deposed leader's late write must not hide its successor's record.
func TestRecordKeepsTheLaterTerm(t *testing.T) {
	e, c := newElection(t, time.Minute)
	ctx := context.Background()
	require.NoError(t, e.write(ctx, Term{Fence: 20, Identity: "new"}))
	require.NoError(t, e.write(ctx, Term{Fence: 10, Identity: "old"}))
	v, err := c.Get(ctx, e.record).Result()
	require.NoError(t, err)
	assert.Equal(t, "20 new", v)
	require.NoError(t, e.write(ctx, Term{Fence: 30, Identity: "newer"}))
	v, err = c.Get(ctx, e.record).Result()
	require.NoError(t, err)
	assert.Equal(t, "30 newer", v)
	ttl, err := c.PTTL(ctx, e.record).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Minute, ttl, float64(time.Second), "the record expires")
}

// A term that outlives the record's expiry keeps its name: the leader
// rewrites it every half of the expiry.
func TestRecordRewrittenWhileLeading(t *testing.T) {
	e, _ := newElection(t, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := e.Run(ctx, func(ctx context.Context, term Term) error {
		for range 5 { // five expiries
			time.Sleep(e.recordTTL)
			leader, err := e.Observe(ctx)
			require.NoError(t, err)
			require.Equal(t, Leader{Term: term.Fence, Identity: "me"}, leader)
		}
		return nil
	})
	require.NoError(t, err)
}

// The record shares the lease's hash tag (its Cluster slot) and the
// namespace prefix of the Locker's ACL key pattern.
func TestRecordKeyInTheLeaseSlot(t *testing.T) {
	lock := leasekeys.Of("ns", "k").Lock
	assert.Equal(t, "ns:{"+leasekeys.HashTag(lock)+"}:n", recordKey("ns", "k"))
}

package election

import (
	"context"
	"strconv"
	"strings"
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
	c := Config{}.withDefaults("k")
	assert.Equal(t, time.Second, c.Pause)
	assert.NotEmpty(t, c.Identity)
	assert.Equal(t, "k", c.Name, "the key names the election")
	assert.Zero(t, Config{Pause: -1}.withDefaults("k").Pause, "negative: no pause")
	assert.Equal(t, time.Minute, Config{Pause: time.Minute}.withDefaults("k").Pause)
}

// newElection returns an Election on a private server, its record expiring
// after recordTTL.
func newElection(t *testing.T, ttl time.Duration) (*Election, *redis.Client) {
	srv := redistest.Start(t)
	c := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	lk := lease.NewLocker(c, lease.Config{TTL: time.Second})
	t.Cleanup(func() { _ = lk.Close() })
	e, err := New(lk, "k", Config{Identity: "me"})
	require.NoError(t, err)
	e.recordTTL = ttl
	return e, c
}

// A deposed leader's late write must not hide its successor's record.
func TestRecordKeepsTheLaterTerm(t *testing.T) {
	e, c := newElection(t, time.Minute)
	ctx := context.Background()
	write := func(fence int64, id string) {
		_, err := e.write(ctx, Term{Fence: fence, Identity: id}, time.Second)
		require.NoError(t, err)
	}
	write(20, "new")
	write(10, "old")
	assert.Regexp(t, `^20 \d+ new$`, c.Get(ctx, e.record).Val())
	write(30, "newer")
	assert.Regexp(t, `^30 \d+ newer$`, c.Get(ctx, e.record).Val())
	ttl, err := c.PTTL(ctx, e.record).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Minute, ttl, float64(time.Second), "the record expires")
}

// The record's until is the server's time plus the validity written; the
// next term's first write tells the time since it, on the server's clock,
// and a term's own writes, or a first one, tell none.
func TestRecordTellsTheTimeWithoutALeader(t *testing.T) {
	e, c := newElection(t, time.Minute)
	ctx := context.Background()
	gap, err := e.write(ctx, Term{Fence: 5, Identity: "a"}, time.Second)
	require.NoError(t, err)
	assert.Negative(t, gap, "no earlier term")
	before := c.Time(ctx).Val()
	_, err = e.write(ctx, Term{Fence: 5, Identity: "a"}, 3*time.Second)
	require.NoError(t, err)
	after := c.Time(ctx).Val()
	_, rest, _ := strings.Cut(c.Get(ctx, e.record).Val(), " ")
	till, _, _ := strings.Cut(rest, " ")
	ms, err := strconv.ParseInt(till, 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ms, before.Add(3*time.Second).UnixMilli())
	assert.LessOrEqual(t, ms, after.Add(3*time.Second).UnixMilli())

	gap, err = e.write(ctx, Term{Fence: 6, Identity: "b"}, time.Second)
	require.NoError(t, err)
	assert.Zero(t, gap, "the next term started within the last one's validity")
	ended := c.Time(ctx).Val().Add(-5 * time.Second).UnixMilli()
	require.NoError(t, c.Set(ctx, e.record, strconv.FormatInt(6, 10)+" "+strconv.FormatInt(ended, 10)+" b", 0).Err())
	gap, err = e.write(ctx, Term{Fence: 7, Identity: "c"}, time.Second)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, gap, 5*time.Second)
	assert.Less(t, gap, time.Minute)
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

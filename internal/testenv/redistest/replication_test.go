package redistest_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

func TestReplicationLifecycle(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	ctx := testContext(t)
	p, r := primary.Client(t), replica.Client(t)

	require.NoError(t, p.Set(ctx, "before", "1", 0).Err())
	require.NoError(t, replica.ReplicaOf(primary))
	v, err := r.Get(ctx, "before").Result()
	require.NoError(t, err, "ReplicaOf returns only after the initial sync")
	assert.Equal(t, "1", v)

	require.NoError(t, p.Set(ctx, "streamed", "2", 0).Err())
	// WAIT proves the replica acknowledged the write, so the read below is
	// not a race against the replication stream.
	acked, err := p.Wait(ctx, 1, 0).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, acked)
	v, err = r.Get(ctx, "streamed").Result()
	require.NoError(t, err)
	assert.Equal(t, "2", v)

	err = r.Set(ctx, "x", "y", 0).Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "READONLY")

	require.NoError(t, replica.StopReplication())
	require.NoError(t, p.Set(ctx, "after", "3", 0).Err())
	// Once the primary has dropped the link there is no path left for the
	// write to reach the replica.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		n, err := p.Wait(ctx, 1, 10*time.Millisecond).Result()
		assert.NoError(c, err)
		assert.Zero(c, n)
	}, waitFor, tick)
	require.ErrorIs(t, r.Get(ctx, "after").Err(), redis.Nil, "a write after StopReplication must not reach the replica")
	v, err = r.Get(ctx, "streamed").Result()
	require.NoError(t, err, "the replica keeps the data it had")
	assert.Equal(t, "2", v)
	err = r.Set(ctx, "x", "y", 0).Err()
	require.Error(t, err, "a cut-off replica is still read-only")
	assert.Contains(t, err.Error(), "READONLY")

	require.NoError(t, replica.Promote())
	require.NoError(t, r.Set(ctx, "x", "y", 0).Err(), "a promoted replica accepts writes")
	v, err = r.Get(ctx, "before").Result()
	require.NoError(t, err)
	assert.Equal(t, "1", v)
}

// A replica whose sync finished while its primary still holds the stream
// back makes a WAIT right after ReplicaOf time out. The lease pipeline that
// exposed it, EVALSHA (NOSCRIPT) then EVAL with WAIT, is repeated here
// because a plain SET with WAIT rarely hits the window.
func TestReplicaOfAnswersWaitAtOnce(t *testing.T) {
	t.Parallel()
	script := redis.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")
	for i := range 10 {
		primary := redistest.Start(t)
		replica := redistest.Start(t)
		ctx := testContext(t)
		require.NoError(t, replica.ReplicaOf(primary))

		p := primary.Client(t)
		withWait := func(cmd func(redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
			pipe := p.Pipeline()
			c := cmd(pipe)
			wait := pipe.Do(ctx, "WAIT", 1, 300)
			_, _ = pipe.Exec(ctx)
			return c, wait
		}
		evalSha, _ := withWait(func(pp redis.Pipeliner) *redis.Cmd { return script.EvalSha(ctx, pp, []string{"k"}, i) })
		require.ErrorContains(t, evalSha.Err(), "NOSCRIPT")
		eval, wait := withWait(func(pp redis.Pipeliner) *redis.Cmd { return script.Eval(ctx, pp, []string{"k"}, i) })
		require.NoError(t, eval.Err())
		acked, err := wait.Int64()
		require.NoError(t, err)
		assert.EqualValues(t, 1, acked, "start %d: the replica must acknowledge at once", i)
	}
}

func TestReplicaOfAfterStopReplicationResyncs(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	ctx := testContext(t)

	require.NoError(t, replica.ReplicaOf(primary))
	require.NoError(t, replica.StopReplication())
	require.NoError(t, primary.Client(t).Set(ctx, "missed", "1", 0).Err())
	require.NoError(t, replica.ReplicaOf(primary))
	v, err := replica.Client(t).Get(ctx, "missed").Result()
	require.NoError(t, err)
	assert.Equal(t, "1", v)
}

func TestStopReplicationOnPrimaryFails(t *testing.T) {
	t.Parallel()
	assert.Error(t, redistest.Start(t).StopReplication())
}

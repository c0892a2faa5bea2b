package redistest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// Generous for a loaded machine; conditions are polled, never slept out.
const (
	waitFor = 10 * time.Second
	tick    = 10 * time.Millisecond
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartAnswersPingOnLoopback(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testContext(t)

	host, _, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.Positive(t, s.Port())

	require.NoError(t, s.Client(t).Ping(ctx).Err())
	reply, err := s.Do(ctx, "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", reply)
}

func TestStartHasNoPersistence(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testContext(t)

	cfg, err := s.Client(t).ConfigGet(ctx, "*").Result()
	require.NoError(t, err)
	assert.Empty(t, cfg["save"])
	assert.Equal(t, "no", cfg["appendonly"])
	assert.Equal(t, "127.0.0.1", cfg["bind"])
}

func TestStartPassesExtraArgs(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, "--maxmemory-policy", "noeviction", "--hz", "50")
	ctx := testContext(t)

	cfg, err := s.Client(t).ConfigGet(ctx, "hz").Result()
	require.NoError(t, err)
	assert.Equal(t, "50", cfg["hz"])
}

func TestParallelStartsGetDistinctPorts(t *testing.T) {
	t.Parallel()
	seen := make(map[int]bool)
	for range 4 {
		s := redistest.Start(t)
		assert.False(t, seen[s.Port()], "port %d handed out twice", s.Port())
		seen[s.Port()] = true
	}
}

func TestKillAndRestartLosesDataOnSamePort(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testContext(t)
	c := s.Client(t)
	port := s.Port()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	require.NoError(t, s.Kill())
	_, err := s.Do(ctx, "PING")
	require.Error(t, err, "a killed server must not answer")

	require.NoError(t, s.Restart())
	assert.Equal(t, port, s.Port())
	// The client configured before the crash reaches the new process on the
	// same address once its dead pooled connection has been discarded.
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		_, err := c.Get(ctx, "k").Result()
		assert.ErrorIs(c2, err, redis.Nil)
	}, waitFor, tick, "restarted server must be empty")
}

func TestStopIsGracefulAndRestartable(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testContext(t)

	require.NoError(t, s.Stop())
	_, err := s.Do(ctx, "PING")
	require.Error(t, err)
	assert.NoError(t, s.Stop(), "stopping twice is a no-op")

	require.NoError(t, s.Restart())
	_, err = s.Do(ctx, "PING")
	assert.NoError(t, err)
}

func TestStopPausedServer(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	require.NoError(t, s.Pause())
	require.NoError(t, s.Stop(), "Stop resumes a paused server so it can shut down")
	_, err := s.Do(testContext(t), "PING")
	assert.Error(t, err)
}

func TestRestartWhileRunningFails(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	assert.Error(t, s.Restart())
}

func TestPauseTimesOutAndResumeRecovers(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testContext(t)
	c := s.Client(t, func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond
		o.MaxRetries = -1
	})
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	require.NoError(t, s.Pause())
	err := c.Get(ctx, "k").Err()
	var netErr net.Error
	require.ErrorAs(t, err, &netErr)
	assert.True(t, netErr.Timeout(), "want a timeout, got %v", err)

	require.NoError(t, s.Resume())
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		v, err := c.Get(ctx, "k").Result()
		assert.NoError(c2, err)
		assert.Equal(c2, "v", v)
	}, waitFor, tick)
}

func TestPausedServerIsKilledByCleanup(t *testing.T) {
	t.Parallel()
	var addr string
	t.Run("leaves a paused server behind", func(t *testing.T) {
		s := redistest.Start(t)
		addr = s.Addr()
		require.NoError(t, s.Pause())
	})
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = conn.Close()
	}
	assert.Error(t, err, "nothing may listen on %s after cleanup", addr)
}

func TestSignalsOnStoppedServerFail(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	require.NoError(t, s.Kill())
	require.Error(t, s.Pause())
	require.Error(t, s.Resume())
	assert.NoError(t, s.Kill(), "killing twice is a no-op")
}

func TestDoReportsServerErrors(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	_, err := s.Do(testContext(t), "NO-SUCH-COMMAND")
	var redisErr redis.Error
	assert.ErrorAs(t, err, &redisErr, "want a server error reply, got %v", err)
}

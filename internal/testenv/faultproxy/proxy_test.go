package faultproxy_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

const (
	shortTimeout = 200 * time.Millisecond
	waitFor      = 10 * time.Second
	tick         = 10 * time.Millisecond
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// setup returns a server, a proxy in front of it, and a client that reaches
// the server only through the proxy. The client neither retries nor waits
// long, so every injected fault shows up as exactly one error.
func setup(t *testing.T, readTimeout time.Duration) (*redistest.Server, *faultproxy.Proxy, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	p := faultproxy.Start(t, srv.Addr())
	c := redis.NewClient(&redis.Options{
		Addr:          p.Addr(),
		ReadTimeout:   readTimeout,
		WriteTimeout:  readTimeout,
		MaxRetries:    -1,
		DialerRetries: 1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return srv, p, c
}

func requireTimeout(t *testing.T, err error) {
	t.Helper()
	var netErr net.Error
	require.ErrorAs(t, err, &netErr)
	assert.True(t, netErr.Timeout(), "want a timeout, got %v", err)
}

func TestPassForwards(t *testing.T) {
	t.Parallel()
	srv, p, c := setup(t, 5*time.Second)
	ctx := testContext(t)

	host, _, err := net.SplitHostPort(p.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	v, err := srv.Do(ctx, "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	got, err := c.Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", got)
}

func TestDropRepliesLosesTheReplyNotTheCommand(t *testing.T) {
	t.Parallel()
	srv, p, c := setup(t, shortTimeout)
	ctx := testContext(t)
	require.NoError(t, c.Ping(ctx).Err(), "warm a pooled connection so the switch hits an open one")

	p.Set(faultproxy.DropReplies)
	requireTimeout(t, c.Set(ctx, "k", "v", 0).Err())
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		v, err := srv.Do(ctx, "GET", "k")
		assert.NoError(c2, err)
		assert.Equal(c2, "v", v)
	}, waitFor, tick, "the command must have reached Redis")

	p.Set(faultproxy.Pass)
	// The timed-out connection was discarded by the client; a new one works.
	assert.NoError(t, c.Ping(ctx).Err())
}

func TestBlackholeTimesOutAndDeliversNothing(t *testing.T) {
	t.Parallel()
	srv, p, c := setup(t, shortTimeout)
	ctx := testContext(t)
	require.NoError(t, c.Ping(ctx).Err())

	p.Set(faultproxy.Blackhole)
	requireTimeout(t, c.Set(ctx, "k", "v", 0).Err())
	// Blackhole discards the command in the proxy itself, so by the time
	// the client has timed out nothing is left in flight to reach Redis.
	_, err := srv.Do(ctx, "GET", "k")
	require.ErrorIs(t, err, redis.Nil)

	p.Set(faultproxy.Pass)
	assert.NoError(t, c.Ping(ctx).Err())
}

func TestResetFailsFast(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	_, p, c := setup(t, timeout)
	ctx := testContext(t)
	require.NoError(t, c.Ping(ctx).Err())

	p.Set(faultproxy.Reset)
	for _, name := range []string{"open connection", "new connection"} {
		start := time.Now()
		err := c.Ping(ctx).Err()
		elapsed := time.Since(start)
		require.Error(t, err, name)
		// Far below the timeouts: the failure came from the reset, not
		// from waiting.
		assert.Less(t, elapsed, timeout/2, "%s: %v", name, err)
	}

	p.Set(faultproxy.Pass)
	assert.NoError(t, c.Ping(ctx).Err())
}

func TestDelayAddsLatencyBothWays(t *testing.T) {
	t.Parallel()
	const d = 100 * time.Millisecond
	_, p, c := setup(t, 5*time.Second)
	ctx := testContext(t)
	require.NoError(t, c.Ping(ctx).Err())

	p.Set(faultproxy.Delay(d))
	start := time.Now()
	require.NoError(t, c.Ping(ctx).Err())
	// Only a lower bound: a loaded machine may add any amount on top.
	assert.GreaterOrEqual(t, time.Since(start), 2*d, "request and reply are each delayed")
}

func TestCloseEndsOpenConnections(t *testing.T) {
	t.Parallel()
	_, p, c := setup(t, 5*time.Second)
	ctx := testContext(t)
	require.NoError(t, c.Ping(ctx).Err())
	p.Set(faultproxy.Delay(time.Hour))

	// Close must not wait for the hour-long delay, and goleak in TestMain
	// checks that nothing it started survives.
	done := make(chan error, 1)
	go func() { done <- c.Ping(ctx).Err() }()
	require.NoError(t, p.Close())
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(waitFor):
		t.Fatal("a request stuck in the proxy did not fail after Close")
	}
	assert.NoError(t, p.Close(), "Close is idempotent")

	_, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	assert.Error(t, err, "a closed proxy accepts nothing")
}

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		mode faultproxy.Mode
		want string
	}{
		{faultproxy.Pass, "Pass"},
		{faultproxy.DropReplies, "DropReplies"},
		{faultproxy.DropRequests, "DropRequests"},
		{faultproxy.Blackhole, "Blackhole"},
		{faultproxy.Reset, "Reset"},
		{faultproxy.Delay(time.Second), "Delay(1s)"},
		{faultproxy.Duplicate(time.Second), "Duplicate(1s)"},
	} {
		assert.Equal(t, tc.want, tc.mode.String())
	}
}

// SetTarget is how a harness fails clients over to a promoted replica: new
// connections reach the new target, and a Reset makes pooled ones redial.
func TestSetTargetRepointsNewConnections(t *testing.T) {
	t.Parallel()
	first, p, c := setup(t, 5*time.Second)
	second := redistest.Start(t)
	ctx := testContext(t)
	_, err := second.Do(ctx, "SET", "where", "second")
	require.NoError(t, err)
	_, err = first.Do(ctx, "SET", "where", "first")
	require.NoError(t, err)
	require.Equal(t, "first", c.Get(ctx, "where").Val())

	p.SetTarget(second.Addr())
	assert.Equal(t, second.Addr(), p.Target())
	p.Set(faultproxy.Reset)
	p.Set(faultproxy.Pass)
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		got, err := c.Get(ctx, "where").Result()
		assert.NoError(c2, err)
		assert.Equal(c2, "second", got)
	}, waitFor, tick)
}

// Duplicate runs every command a second time, late, on another connection,
// and the client never sees the copy's reply.
func TestDuplicateDeliversALateCopy(t *testing.T) {
	t.Parallel()
	const after = 300 * time.Millisecond
	srv, p, c := setup(t, 5*time.Second)
	ctx := testContext(t)
	require.NoError(t, c.Ping(ctx).Err())

	p.Set(faultproxy.Duplicate(after))
	sent := time.Now()
	require.Equal(t, int64(1), c.Incr(ctx, "n").Val(), "the original runs at once and its reply reaches the client")
	require.Equal(t, int64(11), c.IncrBy(ctx, "n", 10).Val())
	p.Set(faultproxy.Pass)
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		v, err := srv.Do(ctx, "GET", "n")
		assert.NoError(c2, err)
		assert.Equal(c2, "22", v, "each command ran twice")
	}, waitFor, tick)
	assert.GreaterOrEqual(t, time.Since(sent), after, "the copies came late")
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		copied, answered := p.Copies()
		assert.Equal(c2, int64(2), copied)
		assert.Equal(c2, int64(2), answered)
	}, waitFor, tick)
	// The client's connection carries no stray reply from a copy.
	assert.Equal(t, int64(23), c.Incr(ctx, "n").Val())
	v, err := srv.Do(ctx, "GET", "n")
	require.NoError(t, err)
	assert.Equal(t, "23", v, "commands sent after the switch back are not copied")
}

// Isolate cuts one source address off, open connections included, and
// leaves every other client alone.
func TestIsolateCutsOneSourceOnly(t *testing.T) {
	t.Parallel()
	_, p, other := setup(t, 300*time.Millisecond)
	ctx := testContext(t)
	from := func(ip string) *redis.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c := redis.NewClient(&redis.Options{
			Addr: p.Addr(), ReadTimeout: 300 * time.Millisecond, MaxRetries: -1, DialerRetries: 1,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
		})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	cut := from("127.0.0.2")
	require.NoError(t, cut.Ping(ctx).Err(), "an open connection, before the cut")
	require.NoError(t, other.Ping(ctx).Err())

	p.Isolate("127.0.0.2")
	requireTimeout(t, cut.Ping(ctx).Err())
	requireTimeout(t, from("127.0.0.2").Ping(ctx).Err())
	require.NoError(t, other.Ping(ctx).Err(), "other sources pass")

	idle, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext(ctx, "tcp", p.Addr())
	require.NoError(t, err)
	defer idle.Close()
	require.NoError(t, idle.SetDeadline(time.Now().Add(2*time.Second)))
	_, err = idle.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	_, err = idle.Read(make([]byte, 16)) // +PONG: the link is up
	require.NoError(t, err)
	p.Isolate("127.0.0.3")
	p.Rejoin("127.0.0.2")
	p.Rejoin("127.0.0.3")
	require.NoError(t, cut.Ping(ctx).Err(), "a new connection passes")
	require.NoError(t, idle.SetDeadline(time.Now().Add(2*time.Second)))
	_, _ = idle.Write([]byte("PING\r\n"))
	_, err = idle.Read(make([]byte, 16))
	require.Error(t, err, "a connection open through the cut is reset: its stream may have lost bytes")
	var netErr net.Error
	assert.False(t, errors.As(err, &netErr) && netErr.Timeout(), "reset, not silent: %v", err)
}

// DropRequests loses what the client sends: the command never runs.
func TestDropRequestsLosesTheCommand(t *testing.T) {
	t.Parallel()
	srv, p, c := setup(t, 300*time.Millisecond)
	ctx := testContext(t)
	p.Set(faultproxy.DropRequests)
	requireTimeout(t, c.Set(ctx, "k", "v", 0).Err())
	p.Set(faultproxy.Pass)
	_, err := srv.Do(ctx, "GET", "k")
	assert.ErrorIs(t, err, redis.Nil, "the SET never reached the server")
}

package election_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
)

func TestNewRefusesInvalidInput(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	lk := lease.NewLocker(client, lease.Config{})
	t.Cleanup(func() { _ = lk.Close() })
	for _, c := range []struct {
		name string
		lk   *lease.Locker
		key  string
		cfg  election.Config
		want string
	}{
		{"nil locker", nil, "k", election.Config{}, "nil Locker"},
		{"empty key", lk, "", election.Config{}, "empty key"},
		{"long identity", lk, "k", election.Config{Identity: strings.Repeat("x", 257)}, "identity of 257 bytes"},
		{"control identity", lk, "k", election.Config{Identity: "a\nb"}, "control character"},
		{"non-UTF-8 identity", lk, "k", election.Config{Identity: "\xff"}, "not UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := election.New(c.lk, c.key, c.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "election: "), err.Error())
		})
	}
}

func TestRunRefusesMisuse(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	e := h.candidate("a", time.Second, election.Config{})
	err := e.Run(ctx, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil function")

	inside := make(chan error, 1)
	done := run(t, ctx, e, func(ctx context.Context, _ election.Term) error {
		inside <- e.Run(ctx, func(context.Context, election.Term) error { return nil })
		return nil
	})
	require.NoError(t, result(t, done, 5*time.Second))
	err = <-inside
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another Run")
}

// TestRecordInTheLockersNamespace: the leader record lives in the
// Locker's namespace, beside the lease's keys, and Observe reads it there.
func TestRecordInTheLockersNamespace(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	c := h.client()
	e, err := election.New(h.locker(c, time.Second), h.key, election.Config{Identity: "a"})
	require.NoError(t, err)
	err = e.Run(ctx, func(ctx context.Context, term election.Term) error {
		keys, err := c.Keys(ctx, h.ns+":*").Result()
		require.NoError(t, err)
		assert.Len(t, keys, 3, "lock, fence and leader record keys: %v", keys)
		leader, err := e.Observe(ctx)
		require.NoError(t, err)
		assert.Equal(t, "a", leader.Identity)
		return nil
	})
	require.NoError(t, err)
}

func TestDefaults(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	c := h.client()
	lk := lease.NewLocker(c, lease.Config{TTL: time.Second}) // namespace "lockwatch"
	t.Cleanup(func() { _ = lk.Close() })
	e, err := election.New(lk, h.key, election.Config{})
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)
	err = e.Run(ctx, func(ctx context.Context, term election.Term) error {
		assert.Equal(t, fmt.Sprintf("%s-%d", host, os.Getpid()), term.Identity)
		leader, err := e.Observe(ctx)
		require.NoError(t, err)
		assert.Equal(t, term.Identity, leader.Identity)
		return nil
	})
	require.NoError(t, err)
}

package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/internal/testenv/redisacl"
	"github.com/lockwatch/lockwatch/lease"
)

// A Locker's user (SECURITY.md) campaigns, writes the leader record and
// observes with no grant of its own: the record is a key of the lease's
// pattern, written by GET and SET from a script.
func TestLockerUserRunsAnElection(t *testing.T) {
	s := redisacl.Start(t)
	ctx, _ := testCtx(t)
	ns := redisacl.LeaseNamespace
	c := s.User(t, redisacl.LockerUser, redisacl.Locker(ns), func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	candidate := func(id string) *election.Election {
		lk := lease.NewLocker(c, lease.Config{TTL: 2 * time.Second})
		t.Cleanup(func() { _ = lk.Close() })
		e, err := election.New(lk, "acl", election.Config{Identity: id, Pause: -1})
		require.NoError(t, err)
		return e
	}
	a, watcher := candidate("a"), candidate("watcher")
	err := a.Run(ctx, func(ctx context.Context, term election.Term) error {
		leader, err := watcher.Observe(ctx)
		require.NoError(t, err)
		assert.Equal(t, election.Leader{Term: term.Fence, Identity: "a"}, leader)
		return nil
	})
	require.NoError(t, err)
	_, err = watcher.Observe(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)
	for _, d := range s.Refusals(t, redisacl.LockerUser) {
		assert.True(t, redisacl.Tolerated(d), "refused: %+v", d)
	}
}

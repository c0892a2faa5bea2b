package lease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestFenceAcrossPromotionOfAReplicaWithAClockBehind tries the one clock
// assumption the fence rests on (RELIABILITY.md), from both sides. A
// replica misses the primary's last acquires, the failover takes failover,
// and the promoted replica's wall clock is behind the old primary's by
// skew. Its fence record for the key is stale, so it mints from its clock:
// max(stale + 1, TIME).
//
//   - skew below the failover time: the new fence is still above every
//     fence the old primary minted;
//   - skew above it (30 s): the new fence is below the old primary's last
//     one. What the resource then does is what the paragraph says: if the
//     old fence was written first, the new holder is refused (unavailable,
//     not unsafe); if the new holder writes first, a late write of the old
//     holder is accepted over it, the one way a stale write gets in;
//   - the same skew with Config.ReplicationAcks: the acquires the replica
//     missed were never held (each is unknown and released), and every
//     fence a holder got is in the replica's record, so the new fence is
//     above them all: the gap is closed for a replica that acknowledged.
func TestFenceAcrossPromotionOfAReplicaWithAClockBehind(t *testing.T) {
	const failover = time.Second
	for _, tc := range []struct {
		name  string
		skew  time.Duration
		ack   bool // acquires wait for the replica (Config.ReplicationAcks)
		above bool // the new fence passes every fence a holder got
	}{
		{"behind by less than the failover", 200 * time.Millisecond, false, true},
		{"behind by more than the failover", 30 * time.Second, false, false},
		{"behind by more, acquires acknowledged", 30 * time.Second, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			primary := redistest.Start(t)
			replica := redistest.StartSkewed(t, -tc.skew)
			require.NoError(t, replica.ReplicaOf(primary))
			ns := testNamespace(t)
			cfg := Config{Namespace: ns}
			if tc.ack {
				cfg.ReplicationAcks, cfg.ReplicationTimeout = 1, 200*time.Millisecond
			}
			onPrimary := newLocker(t, primary.Client(t), cfg)
			last := acquireReleaseN(ctx, t, onPrimary, "k", 1)
			require.NoError(t, replica.StopReplication())
			if tc.ack {
				lockKey, _ := redisKeys(ns, "k")
				pc := primary.Client(t)
				for range 3 {
					_, err := onPrimary.Acquire(ctx, "k")
					require.ErrorIs(t, err, ErrUnknown, "unacknowledged: never held")
					require.Eventually(t, func() bool { return pc.Exists(ctx, lockKey).Val() == 0 },
						5*time.Second, 5*time.Millisecond, "the unacknowledged lock is released, not left to expire")
				}
			} else {
				last = acquireReleaseN(ctx, t, onPrimary, "k", 3) // the replica misses these
			}
			time.Sleep(failover)
			require.NoError(t, primary.Kill())
			require.NoError(t, replica.Promote())

			l, err := newLocker(t, replica.Client(t), Config{Namespace: ns}).Acquire(ctx, "k")
			require.NoError(t, err)
			defer func() { _ = l.Release(ctx) }()
			if tc.above {
				assert.Greater(t, l.Fence(), last, "the fence keeps rising past every fence a holder got")
				return
			}
			require.Less(t, l.Fence(), last, "a clock behind by more than the failover time mints below the old primary")

			// The resource, in both orders of the two holders' writes: one
			// store per order, each guarding lock key "k", whose tokens
			// both holders carry (the old holder's is the one its lease
			// minted, unsigned as the Locker has no secrets).
			rc := redistest.Start(t).Client(t)
			oldFirst := fence.NewRedisStore(rc, "skew-old-first", fence.RedisConfig{LockNamespace: ns})
			newFirst := fence.NewRedisStore(rc, "skew-new-first", fence.RedisConfig{LockNamespace: ns})
			old := fence.Mint(ns, "k", last, nil)
			require.NoError(t, oldFirst.Write(ctx, "k", old, []byte("old holder")))
			require.ErrorIs(t, oldFirst.Write(ctx, "k", l.Token(), []byte("new holder")), fence.ErrStale,
				"the new holder is refused: unavailable until its primary's clock passes the old fence")
			require.NoError(t, newFirst.Write(ctx, "k", l.Token(), []byte("new holder")))
			assert.NoError(t, newFirst.Write(ctx, "k", old, []byte("old holder, late")),
				"the old holder's late write is accepted over the new holder's: the gap")
		})
	}
}

package lease

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestSentinelFailover runs lockwatch through redis.NewFailoverClient while
// three real sentinels fail a primary with two replicas over, after a
// SIGKILL of the primary and after a SIGSTOP past down-after-milliseconds;
// the test decides nothing, the sentinels do. A lease
// taken with a replication ack from both replicas has its key on whichever
// the sentinels promote, so on the new primary it is still held, renewed
// there or, if its renewals failed meanwhile, until it expires: a second
// Locker waiting for the key gets it only once the first lease has ended,
// with a larger fence. (With an ack from fewer replicas than can be
// promoted, the key may be gone on the new primary while its holder still
// works: the fence is what rejects that holder's writes, see
// TestFenceSurvivesPromotionOfStaleReplica.) A new key can be taken on the
// new primary.
func TestSentinelFailover(t *testing.T) {
	for _, fault := range []string{"SIGKILL", "SIGSTOP"} {
		t.Run(fault, func(t *testing.T) { testSentinelFailover(t, fault) })
	}
}

// testSentinelFailover breaks the primary with fault: SIGKILL, or SIGSTOP
// past down-after-milliseconds, resumed once the sentinels promoted a
// replica (it comes back believing itself the primary, until the
// sentinels make it a replica of the new one).
func testSentinelFailover(t *testing.T, fault string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	primary := redistest.Start(t)
	replicas := []*redistest.Server{redistest.Start(t), redistest.Start(t)}
	for _, r := range replicas {
		require.NoError(t, r.ReplicaOf(primary))
	}
	ss := redistest.StartSentinels(t, primary, redistest.SentinelConfig{Name: "lockwatch"})
	timeouts := func(o *redis.FailoverOptions) { o.ContextTimeoutEnabled = true }
	ns := testNamespace(t)
	holder := newLocker(t, ss.Client(t, timeouts), Config{Namespace: ns, TTL: 3 * time.Second, ReplicationAcks: 2, ReplicationTimeout: 500 * time.Millisecond})
	other := newLocker(t, ss.Client(t, timeouts), Config{Namespace: ns, TTL: 3 * time.Second})

	first, err := holder.Acquire(ctx, "k")
	require.NoError(t, err)
	broken := time.Now()
	if fault == "SIGKILL" {
		require.NoError(t, primary.Kill())
	} else {
		require.NoError(t, primary.Pause())
	}
	h := watchHandover(ctx, first, other)

	promoted, err := ss.WaitPromoted(ctx, primary.Addr())
	require.NoError(t, err)
	require.Contains(t, []string{replicas[0].Addr(), replicas[1].Addr()}, promoted)
	t.Logf("%s of the primary to a majority of sentinels naming %s: %v", fault, promoted, time.Since(broken).Round(time.Millisecond))
	if fault == "SIGSTOP" {
		require.NoError(t, primary.Resume())
	}

	// A new key on the new primary, once go-redis has followed the switch.
	for {
		l, err := other.Acquire(ctx, "fresh")
		if err == nil {
			t.Logf("%s to the first acquire on the new primary: %v (fence %d)", fault, time.Since(broken).Round(time.Millisecond), l.Fence())
			require.NoError(t, l.Release(ctx))
			break
		}
		require.NoError(t, ctx.Err(), "no acquire on the new primary: %v", err)
		time.Sleep(50 * time.Millisecond)
	}

	h.check(ctx, t)
	if fault == "SIGSTOP" {
		// The old primary is made a replica of the new one.
		for {
			role, err := primary.Do(ctx, "ROLE")
			if r, ok := role.([]any); err == nil && ok && len(r) > 0 && r[0] == "slave" {
				break
			}
			require.NoError(t, ctx.Err(), "the resumed primary was never made a replica")
			time.Sleep(50 * time.Millisecond)
		}
	}
}

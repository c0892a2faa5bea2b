package main

import (
	"slices"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/permits"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The permit checks on small histories whose verdict is known: a checker
// that cannot fail proves nothing.

func permitRec(holder string, index int, fence, from, to int64) leaseRec {
	return leaseRec{Holder: holder, Key: permitKey(permitsKey, index), Fence: fence, Acquired: from, Done: to, Released: to, End: to, Permit: true}
}

// permitKey is permits.Key, so that the synthetic histories name their
// permits as the holders do.
var permitKey = permits.Key

func unexplained(leaseRec, leaseRec) string { return overlapUnexplained }

// TestOverLimitControl: three holders live at once on a semaphore of two
// permits is over the limit, whichever permits they report; two at once,
// or three one after another, is not; and a holder whose permit's key
// Redis lost does not count against the limit.
func TestOverLimitControl(t *testing.T) {
	within := []leaseRec{permitRec("s1", 0, 1, 0, 100), permitRec("s2", 1, 1, 10, 120), permitRec("s3", 0, 2, 100, 200)}
	assert.Empty(t, overLimits(within, 2, unexplained), "a permit's next holder may start when its last one ended")
	assert.Equal(t, 2, maxLive(within))

	over := slices.Concat(within, []leaseRec{permitRec("s4", 0, 3, 50, 60)}) // s1 and s2 live: a third
	found := overLimits(over, 2, unexplained)
	require.Len(t, found, 1)
	assert.Equal(t, "s4", found[0].second.Holder)
	assert.Len(t, found[0].live, 2)
	assert.Contains(t, found[0].String(), "while 2 holders of the limit 2 were live")
	assert.Equal(t, 3, maxLive(over))
	assert.Empty(t, overLimits(over, 3, unexplained), "within a limit of 3")

	// Over the limit on distinct permits: a third permit index the
	// semaphore does not have still counts.
	distinct := slices.Concat(within[:2], []leaseRec{permitRec("s4", 2, 1, 50, 60)})
	assert.Len(t, overLimits(distinct, 2, unexplained), 1)

	lost := func(a, b leaseRec) string {
		if a.Holder == "s1" {
			return overlapRedisLoss
		}
		return overlapUnexplained
	}
	assert.Empty(t, overLimits(over, 2, lost), "s1's permit lost in Redis: s4 is the second live holder")

	notPermits := []leaseRec{{Holder: "g1", Key: "k1", Acquired: 0, Done: 100, Released: 100}, {Holder: "g2", Key: "k1", Acquired: 10, Done: 100, Released: 100}}
	assert.Empty(t, overLimits(notPermits, 1, unexplained), "only permits count")
}

// TestPermitOverlapControl: two holders of one permit live at once are
// check 5's overlap, unexplained without a loss in Redis, and
// summary.addPermits counts a holder past the limit as an unexplained
// overlap and a violation.
func TestPermitOverlapControl(t *testing.T) {
	same := []leaseRec{permitRec("s1", 1, 4, 0, 100), permitRec("s2", 1, 5, 50, 150)}
	found := overlaps(same, nil, nil, time.Second, 100*time.Millisecond, func(int, int64, int64) bool { return false })
	require.Len(t, found, 1)
	assert.Equal(t, overlapUnexplained, found[0].why)

	fo := failover{Keys: []string{permitsKey}, Broken: 40, Promoted: 45}
	assert.True(t, fo.serves(permitKey(permitsKey, 1)), "a permit is served where its semaphore's key is")
	assert.False(t, failover{Keys: []string{"k1"}}.serves(permitKey(permitsKey, 1)))
	found = overlaps(same, nil, []failover{fo}, time.Second, 100*time.Millisecond, func(int, int64, int64) bool { return false })
	require.Len(t, found, 1)
	assert.Equal(t, overlapRedisLoss, found[0].why, "the failover lost permit 1's key")

	cfg := defaultConfig()
	cfg.permitLimit = 1
	var s summary
	s.addPermits(cfg, nil, same, nil, nil, permitCounts{Acquires: map[string]int64{}}, nil)
	assert.Equal(t, 1, s.Permits.OverLimit)
	assert.Equal(t, 1, s.UnexplainedOverlaps, "past the limit is an unexplained overlap")
	assert.Equal(t, 1, s.Permits.PerPermit)
	assert.Contains(t, s.Violations, "over the limit: "+overLimit{second: same[1], live: same[:1], limit: 1}.String())
}

// TestPermitFencing: each permit is its own fencing domain. A stale write
// of a permit after the permit's newer holder wrote is a violation; a
// write with a lower token to another permit is not.
func TestPermitFencing(t *testing.T) {
	ok := []op{
		write("s1", permitKey(permitsKey, 0), 7, "s1/1", outOK, 0, 10),
		write("s2", permitKey(permitsKey, 1), 3, "s2/1", outOK, 20, 30),
	}
	bad, _ := realTimeOrder(ok)
	assert.Empty(t, bad, "permits 0 and 1 do not compete at the resource")

	stale := slices.Concat(ok, []op{write("s3", permitKey(permitsKey, 0), 6, "s3/1", outOK, 40, 50)})
	bad, offenders := realTimeOrder(stale)
	require.Len(t, bad, 1)
	assert.Equal(t, "s3/1", offenders[0].Value)
}

// TestPermitMetricsCompared: the semaphore's counters must equal the
// history.
func TestPermitMetricsCompared(t *testing.T) {
	ops := []op{
		{Holder: "s1", Kind: kindAcquire, Key: permitKey(permitsKey, 0), Permit: true, Outcome: outAcquired},
		{Holder: "s2", Kind: kindAcquire, Key: permitsKey, Permit: true, Outcome: outContended, Wait: time.Second},
		{Holder: "g1", Kind: kindAcquire, Key: "k1", Outcome: outAcquired},
	}
	leases := []leaseRec{permitRec("s1", 0, 1, 0, 10)}
	leases[0].Lost = true
	cfg := defaultConfig()
	exact := permitCounts{Acquires: map[string]int64{outAcquired: 1, outContended: 1}, Losses: 1, Leases: counts{Losses: 1}}
	p := permitFiguresOf(cfg, ops, leases, nil, exact, unexplained)
	assert.True(t, p.MetricsExact, "%v", p.violations)
	assert.Equal(t, 1, p.Waited)
	assert.Equal(t, 1, p.Lost)

	off := exact
	off.Held = 1
	p = permitFiguresOf(cfg, ops, leases, nil, off, unexplained)
	assert.False(t, p.MetricsExact)
	assert.Equal(t, []string{"permit metrics not exact: permits held at the end: metrics 1, holders saw 0"}, p.violations)

	leases[0].Late = true // a write completed after the loss, which the counter missed
	p = permitFiguresOf(cfg, ops, leases, nil, exact, unexplained)
	assert.Equal(t, []string{"permit metrics not exact: late completions: metrics 0, holders saw 1"}, p.violations)
	leases[0].Late = false

	c := holderCounts(ops, leases)
	assert.Equal(t, map[string]int64{outAcquired: 1}, c.Acquires, "the lock holders' counts leave the permits out")
	assert.Zero(t, c.Losses)
}

package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The checks themselves, on small histories whose verdict is known: a
// checker that cannot fail proves nothing.

func write(holder, key string, token int64, value, outcome string, invoke, ret int64) op {
	return op{Holder: holder, Kind: kindWrite, Key: key, Reg: regRedis, Fence: token, Value: value, Outcome: outcome, Invoke: invoke, Return: ret}
}

func read(holder, key string, mark int64, value string, invoke, ret int64) op {
	return op{Holder: holder, Kind: kindRead, Key: key, Reg: regRedis, Mark: mark, Value: value, Outcome: outOK, Invoke: invoke, Return: ret}
}

func TestRealTimeOrder(t *testing.T) {
	ok := []op{
		write("a", "k", 10, "a1", outOK, 0, 10),
		write("b", "k", 20, "b1", outOK, 20, 30),
		write("c", "k", 15, "c1", outOK, 25, 40), // overlaps b: no order between them
		write("d", "other", 5, "d1", outOK, 50, 60),
	}
	bad, offenders := realTimeOrder(ok)
	assert.Empty(t, bad)
	assert.Empty(t, offenders)

	stale := slices.Concat(ok, []op{write("e", "k", 20, "e1", outOK, 45, 50), write("f", "k", 12, "f1", outOK, 55, 70)})
	bad, offenders = realTimeOrder(stale)
	assert.Len(t, bad, 2, "%v", bad)
	assert.ElementsMatch(t, []string{"e1", "f1"}, []string{offenders[0].Value, offenders[1].Value})
}

func TestRegisterLinearizability(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []op
		want string
	}{
		{"sequential", []op{
			write("a", "k", 10, "a1", outOK, 0, 10),
			read("r", "k", 10, "a1", 11, 12),
			write("b", "k", 5, "b1", outStale, 13, 14),
			write("c", "k", 20, "c1", outOK, 15, 16),
			read("r", "k", 20, "c1", 17, 18),
		}, "ok"},
		{"unknown write that took effect", []op{
			write("a", "k", 10, "a1", outUnknown, 0, 1),
			read("r", "k", 10, "a1", 5, 6),
		}, "ok"},
		{"unknown write that did not", []op{
			write("a", "k", 10, "a1", outUnknown, 0, 1),
			read("r", "k", 0, "", 5, 6),
		}, "ok"},
		{"stale write accepted", []op{
			write("a", "k", 20, "a1", outOK, 0, 10),
			write("b", "k", 10, "b1", outOK, 20, 30),
		}, "fail"},
		{"read of a value overwritten before it was read", []op{
			write("a", "k", 10, "a1", outOK, 0, 10),
			write("b", "k", 20, "b1", outOK, 20, 30),
			read("r", "k", 10, "a1", 40, 50),
		}, "fail"},
		{"rejected below a mark the store never had", []op{
			write("a", "k", 10, "a1", outOK, 0, 10),
			{Holder: "b", Kind: kindWrite, Key: "k", Reg: regRedis, Fence: 12, Value: "b1", Outcome: outStale, Mark: 30, Exact: true, Invoke: 20, Return: 30},
		}, "fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			got, details, vis := linearizable(tc.ops, dir, 10*time.Second)
			assert.Equal(t, tc.want, got, "%v", details)
			if tc.want == "fail" {
				assert.FileExists(t, vis)
			}
		})
	}
}

func TestLateWork(t *testing.T) {
	const ms = int64(time.Millisecond)
	never := func(int, int64, int64) bool { return false }
	leases := []leaseRec{
		{Holder: "quick", Lost: true, Acquired: 0, Cancel: 100 * ms, End: 101 * ms},
		{Holder: "slow", Lost: true, Acquired: 0, Cancel: 100 * ms, End: 400 * ms},
		{Holder: "in-commit", Lost: true, Acquired: 0, Commit: 90 * ms, Cancel: 100 * ms, End: 900 * ms, Late: true},
		{Holder: "not-lost", Acquired: 0, End: 900 * ms},
		// Lost while a read hung on a stale connection: counted from the
		// read's end, and the work stopped at once after it.
		{Holder: "stale-read", Lost: true, Acquired: 0, Cancel: 100 * ms, Reads: 2600 * ms, End: 2610 * ms},
		{Holder: "slow-after-read", Lost: true, Acquired: 0, Cancel: 100 * ms, Reads: 2600 * ms, End: 2900 * ms},
	}
	bad, slowest := lateWork(leases, 50*time.Millisecond, never)
	assert.Len(t, bad, 2)
	assert.Contains(t, bad[1], "slow-after-read ran 300ms")
	bad, _ = lateWork(leases[:4], 50*time.Millisecond, never)
	assert.Len(t, bad, 1)
	assert.Contains(t, bad[0], "slow ran 300ms")
	assert.Equal(t, 300*time.Millisecond, slowest)

	stopped := func(proc int, _, _ int64) bool { return proc == 1 }
	bad, _ = lateWork([]leaseRec{
		{Holder: "p1", Proc: 1, Lost: true, Cancel: 100 * ms, End: 5000 * ms, Paused: true, Late: true},
		{Holder: "p2", Proc: 2, Lost: true, Cancel: 100 * ms, End: 110 * ms, Paused: true},
	}, 50*time.Millisecond, stopped)
	assert.Len(t, bad, 1, "a holder stopped inside its Commit must be a late completion")
	assert.Contains(t, bad[0], "p2 was stopped inside its Commit")
}

func TestCompareCounts(t *testing.T) {
	m := counts{Rejections: 2, Losses: 3, Late: 1, Acquires: map[string]int64{outAcquired: 5}}
	assert.Empty(t, compareCounts(m, counts{Rejections: 2, Losses: 3, Late: 1, Acquires: map[string]int64{outAcquired: 5}}, "metrics", "holders saw"))
	diff := compareCounts(m, counts{Rejections: 1, Losses: 3, Late: 1, Acquires: map[string]int64{outAcquired: 5, outUnknown: 1}}, "metrics", "holders saw")
	assert.Equal(t, []string{"fence rejections: metrics 2, holders saw 1", "acquires unknown: metrics 0, holders saw 1"}, diff)
	m.Active, m.Waiting = 1, 1
	assert.Equal(t, []string{"leases active at the end: metrics 1, holders saw 0", "callers waiting for a lease at the end: metrics 1, holders saw 0"},
		compareCounts(m, counts{Rejections: 2, Losses: 3, Late: 1, Acquires: map[string]int64{outAcquired: 5}}, "metrics", "holders saw"))
}

func TestAttribute(t *testing.T) {
	const s = int64(time.Second)
	faults := []injected{
		{fault: fault{Kind: faultRedisStop}, Start: 10 * s, End: 12 * s},
		{fault: fault{Kind: faultRunStop}, Start: 11 * s, End: 14 * s}, // the run lane, beside the main one
		{fault: fault{Kind: faultBlackhole}, Start: 20 * s, End: 21 * s},
	}
	rows := attribute(topoSingle.faults(), faults, 2*time.Second, []event{
		{kind: evLost, at: 11 * s}, {kind: evUnknown, at: 13 * s}, {kind: evLost, at: 15 * s}, {kind: evRejected, at: 22 * s},
		{kind: evAccepted, at: 30 * s}, {kind: evOverlap, at: 12 * s, run: true}, {kind: evUnexplained, at: 12 * s, run: true},
		{kind: evOverlap, at: 12 * s},
	})
	byName := map[string]row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	assert.Equal(t, row{Name: "redis-stop", Injected: 1, Lost: 1, Unknown: 1, Overlaps: 1}, byName["redis-stop"],
		"the main lane's events count for its faults, whatever the run lane does meanwhile")
	assert.Equal(t, row{Name: "run-stop", Injected: 1, Overlaps: 1, Unexplained: 1}, byName["run-stop"])
	assert.Equal(t, row{Name: "proxy-blackhole", Injected: 1, Rejected: 1}, byName["proxy-blackhole"])
	assert.Equal(t, row{Name: "no fault", Lost: 1, Accepted: 1}, byName["no fault"])
	assert.Equal(t, row{Name: "total", Injected: 3, Lost: 2, Unknown: 1, Rejected: 1, Accepted: 1, Overlaps: 2, Unexplained: 1}, rows[len(rows)-1])
}

func TestOverlaps(t *testing.T) {
	const ms = int64(time.Millisecond)
	never := func(int, int64, int64) bool { return false }
	lease := func(holder string, proc int, fence, from, done, released int64) leaseRec {
		return leaseRec{Holder: holder, Proc: proc, Key: "k", Fence: fence, Acquired: from * ms, Done: done * ms, Released: released * ms}
	}
	// Back to back is no overlap: a's Release call and b's acquire return
	// are exact times on one clock.
	assert.Empty(t, overlaps([]leaseRec{lease("a", 0, 1, 0, 101, 100), lease("b", 0, 2, 100, 300, 300)}, nil, nil, time.Second, 50*time.Millisecond, never))

	// b got the key while a's context was live (a's Done came after b's
	// acquire, a's Release later still): unexplained without a fault.
	got := overlaps([]leaseRec{lease("a", 0, 1, 0, 250, 260), lease("b", 0, 2, 200, 400, 400)}, nil, nil, time.Second, 50*time.Millisecond, never)
	require.Len(t, got, 1)
	assert.Equal(t, overlapUnexplained, got[0].why)
	assert.Contains(t, got[0].String(), "b acquired k (fence 2) 50ms before a's lease (fence 1) ended: unexplained")

	// The same after a restart that lost the key: explained.
	restart := []injected{{fault: fault{Kind: faultKill}, Start: 100 * ms, End: 150 * ms}}
	got = overlaps([]leaseRec{lease("a", 0, 1, 0, 250, 260), lease("b", 0, 2, 200, 400, 400)}, restart, nil, time.Second, 50*time.Millisecond, never)
	require.Len(t, got, 1)
	assert.Equal(t, overlapRedisLoss, got[0].why)
	// A restart before a was acquired explains nothing.
	early := []injected{{fault: fault{Kind: faultKill}, Start: -200 * ms, End: -100 * ms}}
	got = overlaps([]leaseRec{lease("a", 0, 1, 0, 250, 260), lease("b", 0, 2, 200, 400, 400)}, early, nil, time.Second, 50*time.Millisecond, never)
	assert.Equal(t, overlapUnexplained, got[0].why)
	// Nor does a fault of another kind.
	stall := []injected{{fault: fault{Kind: faultRedisStop}, Start: 100 * ms, End: 150 * ms}}
	got = overlaps([]leaseRec{lease("a", 0, 1, 0, 250, 260), lease("b", 0, 2, 200, 400, 400)}, stall, nil, time.Second, 50*time.Millisecond, never)
	assert.Equal(t, overlapUnexplained, got[0].why)

	// A failover that served k, promoting a replica after a was acquired
	// and before b: explained; one of another key's primary, or the
	// coordinated CLUSTER FAILOVER that loses nothing, explains nothing.
	pair := []leaseRec{lease("a", 0, 1, 0, 250, 260), lease("b", 0, 2, 200, 400, 400)}
	promoted := failover{Kind: faultPrimaryKill, Broken: 100 * ms, Promoted: 150 * ms}
	for _, tc := range []struct {
		fo   failover
		want string
	}{
		{promoted, overlapRedisLoss},
		{failover{Kind: faultMasterKill, Broken: 100 * ms, Promoted: 150 * ms, Keys: []string{"other"}}, overlapUnexplained},
		{failover{Kind: faultMasterKill, Broken: 100 * ms, Promoted: 150 * ms, Keys: []string{"k"}}, overlapRedisLoss},
		{failover{Kind: faultClusterFailover, Broken: 100 * ms, Promoted: 150 * ms, Keys: []string{"k"}}, overlapUnexplained},
		// Promoted before a: a was taken on the new primary; but the old
		// one was back as a primary too when both were acquired.
		{failover{Kind: faultPrimaryStop, Broken: -3000 * ms, Promoted: -2000 * ms, Back: -100 * ms, Demoted: 300 * ms}, overlapRedisLoss},
		{failover{Kind: faultPrimaryStop, Broken: -3000 * ms, Promoted: -2000 * ms, Back: -1900 * ms, Demoted: -1800 * ms}, overlapUnexplained},
	} {
		got = overlaps(pair, nil, []failover{tc.fo}, time.Second, 50*time.Millisecond, never)
		assert.Equal(t, tc.want, got[0].why, "%+v", tc.fo)
	}

	// a's process was stopped until just before b's acquire: explained.
	stopped := func(proc int, from, to int64) bool { return proc == 1 && from <= 180*ms && to >= 100*ms }
	got = overlaps([]leaseRec{lease("a", 1, 1, 0, 250, 260), lease("b", 0, 2, 200, 400, 400)}, nil, nil, time.Second, 50*time.Millisecond, stopped)
	assert.Equal(t, overlapStopped, got[0].why)
	// ... but not if it had been running again for longer than the window.
	got = overlaps([]leaseRec{lease("a", 1, 1, 0, 350, 360), lease("b", 0, 2, 300, 400, 400)}, nil, nil, time.Second, 50*time.Millisecond, stopped)
	assert.Equal(t, overlapUnexplained, got[0].why)
}

func TestLateCancels(t *testing.T) {
	const ms = int64(time.Millisecond)
	never := func(int, int64, int64) int64 { return 0 }
	leases := []leaseRec{
		{Holder: "prompt", ErrAt: 100 * ms, Done: 101 * ms},
		{Holder: "late", Key: "k", Fence: 7, ErrAt: 100 * ms, Done: 400 * ms},
		{Holder: "never-lost", Done: 900 * ms},
	}
	late, bad := lateCancels(leases, 50*time.Millisecond, never)
	require.Len(t, late, 1)
	assert.Equal(t, "late", late[0].Holder)
	assert.Equal(t, []string{"late_cancel: late's lease on k (fence 7) was lost by its Err 300ms before its context was done (window 50ms)"}, bad)

	// Stopped from 150 to 380ms: cancelled 20ms after its resume is prompt.
	resumed := func(int, int64, int64) int64 { return 380 * ms }
	late, _ = lateCancels(leases, 50*time.Millisecond, resumed)
	assert.Empty(t, late, "a process stopped in between could not cancel")
	// Resumed at 150ms, cancelled 250ms later: late.
	resumed = func(int, int64, int64) int64 { return 150 * ms }
	late, _ = lateCancels(leases, 50*time.Millisecond, resumed)
	assert.Len(t, late, 1)
}

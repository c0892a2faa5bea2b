package main

import (
	"slices"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shared lease checks on small histories whose verdict is known: a
// checker that cannot fail proves nothing.

func readerRec(holder string, index int, fence, from, to int64) leaseRec {
	return leaseRec{Holder: holder, Key: permitKey(sharedKey, index), Fence: fence, Acquired: from, Done: to, Released: to, End: to, Shared: roleReader}
}

func writerRec(holder string, fence, from, to int64) leaseRec {
	return leaseRec{Holder: holder, Key: sharedKey, Fence: fence, Acquired: from, Done: to, Released: to, End: to, Shared: roleWriter}
}

// TestBesideWriterControl: readers live together, then writers one after
// another, is clean; a writer that began while a reader was live, or a
// reader that began while a writer was, is flagged, unless Redis lost the
// key; two writers at once are check 5's.
func TestBesideWriterControl(t *testing.T) {
	clean := []leaseRec{readerRec("rd1", 0, 1, 0, 100), readerRec("rd2", 1, 1, 10, 120),
		writerRec("wr1", 5, 150, 250), writerRec("wr2", 6, 300, 400), readerRec("rd3", 0, 2, 400, 450)}
	assert.Empty(t, besideWriter(clean, unexplained), "a writer after the readers, a reader after the writer")
	f := sharedFiguresOf(defaultConfig(), nil, clean, nil, permitCounts{Acquires: map[string]int64{}}, unexplained)
	assert.Zero(t, f.Beside)
	assert.Equal(t, 2, f.MaxReaders)
	assert.Empty(t, f.violations)

	early := slices.Concat(clean, []leaseRec{writerRec("wr2", 4, 50, 60)}) // rd1 and rd2 live
	found := besideWriter(early, unexplained)
	require.Len(t, found, 2)
	assert.Equal(t, "wr2", found[0].second.Holder)
	assert.ElementsMatch(t, []string{"rd1", "rd2"}, []string{found[0].first.Holder, found[1].first.Holder})

	late := slices.Concat(clean, []leaseRec{readerRec("rd3", 1, 2, 200, 210)}) // wr1 live
	found = besideWriter(late, unexplained)
	require.Len(t, found, 1)
	assert.Contains(t, found[0].String(), "rd3 acquired r1#1 (fence 2)")
	assert.Contains(t, found[0].String(), "before wr1's lease (fence 5) ended: unexplained")

	lost := func(a, b leaseRec) string {
		if a.Holder == "wr1" {
			return overlapRedisLoss
		}
		return overlapUnexplained
	}
	f = sharedFiguresOf(defaultConfig(), nil, late, nil, permitCounts{Acquires: map[string]int64{}}, lost)
	assert.Zero(t, f.Beside, "wr1's key lost in Redis")
	assert.Equal(t, 1, f.BesideExplained)

	two := slices.Concat(clean, []leaseRec{writerRec("wr2", 7, 200, 260)})
	assert.Empty(t, besideWriter(two, unexplained), "two writers are one key's: check 5")
	o := overlaps(two, nil, nil, time.Second, 100*time.Millisecond, func(int, int64, int64) bool { return false })
	require.Len(t, o, 1)
	assert.Equal(t, overlapUnexplained, o[0].why)
	assert.Equal(t, 1, sharedFiguresOf(defaultConfig(), nil, two, o, permitCounts{Acquires: map[string]int64{}}, unexplained).TwoWriters)
}

// TestSharedSummary: summary.addShared counts a reader beside a writer,
// and a third reader live on a limit of two, as unexplained overlaps and
// violations.
func TestSharedSummary(t *testing.T) {
	cfg := defaultConfig()
	var s summary
	s.addShared(cfg, nil, []leaseRec{readerRec("rd1", 0, 1, 0, 100), writerRec("wr1", 5, 50, 150)}, nil, nil,
		permitCounts{Acquires: map[string]int64{}}, nil)
	assert.Equal(t, 1, s.Shared.Beside)
	assert.Equal(t, 1, s.UnexplainedOverlaps)
	require.Len(t, s.Violations, 1)
	assert.Contains(t, s.Violations[0], "reader beside a writer: wr1 acquired r1 (fence 5)")

	s = summary{}
	three := []leaseRec{readerRec("rd1", 0, 1, 0, 100), readerRec("rd2", 1, 1, 10, 100), readerRec("rd3", 0, 2, 20, 100)}
	s.addShared(cfg, nil, three, nil, nil, permitCounts{Acquires: map[string]int64{}}, nil)
	assert.Equal(t, 1, s.Shared.OverLimit)
	assert.Equal(t, 3, s.Shared.MaxReaders)
	assert.GreaterOrEqual(t, s.UnexplainedOverlaps, 1)
}

// TestWriterFencing: a writer's token is the key's own, so check 1
// compares every writer's with every earlier writer's: a write accepted
// with a token below an earlier writer's, or a writer's token minted
// below one that had returned, is a violation; readers' permits are
// domains of their own.
func TestWriterFencing(t *testing.T) {
	ok := []op{
		write("wr1", sharedKey, 7, "wr1/1", outOK, 0, 10),
		write("rd1", permitKey(sharedKey, 0), 3, "rd1/1", outOK, 20, 30),
		write("wr2", sharedKey, 9, "wr2/1", outOK, 40, 50),
	}
	bad, _ := realTimeOrder(ok)
	assert.Empty(t, bad)

	stale := slices.Concat(ok, []op{write("wr1", sharedKey, 7, "wr1/2", outOK, 60, 70)})
	bad, offenders := realTimeOrder(stale)
	require.Len(t, bad, 1)
	assert.Equal(t, "wr1/2", offenders[0].Value)

	minted := []op{
		{Holder: "wr1", Kind: kindAcquire, Key: sharedKey, Fence: 7, Invoke: 0, Return: 10, Outcome: outAcquired, Shared: roleWriter},
		{Holder: "wr2", Kind: kindAcquire, Key: sharedKey, Fence: 6, Invoke: 20, Return: 30, Outcome: outAcquired, Shared: roleWriter},
	}
	bad, _ = realTimeOrder(minted)
	assert.Len(t, bad, 1, "a later writer's token below an earlier writer's")
}

// TestSharedMetricsCompared: the readers' acquires and losses are exact;
// a yield is counted apart from other losses; the leases' losses are at
// least the holders'.
func TestSharedMetricsCompared(t *testing.T) {
	ops := []op{
		{Holder: "rd1", Kind: kindAcquire, Key: permitKey(sharedKey, 0), Shared: roleReader, Outcome: outAcquired, Wait: time.Second},
		{Holder: "rd2", Kind: kindAcquire, Key: sharedKey, Shared: roleReader, Outcome: outContended},
		{Holder: "wr1", Kind: kindAcquire, Key: sharedKey, Shared: roleWriter, Outcome: outAcquired, Wait: time.Second},
	}
	rd, wr := readerRec("rd1", 0, 1, 0, 10), writerRec("wr1", 5, 20, 30)
	rd.Lost, rd.Reason = true, string(lease.LossYielded)
	wr.Lost, wr.Reason = true, "renewal_rejected"
	exact := permitCounts{Acquires: map[string]int64{outAcquired: 1, outContended: 1}, Losses: 1, Leases: counts{Losses: 3}}
	f := sharedFiguresOf(defaultConfig(), ops, []leaseRec{rd, wr}, nil, exact, unexplained)
	assert.True(t, f.MetricsExact, "%v", f.violations)
	assert.Equal(t, 1, f.Yielded)
	assert.Zero(t, f.ReadersLost)
	assert.Equal(t, 1, f.WritersLost)
	assert.Equal(t, 1, f.Waited)
	assert.Equal(t, 1, f.WriteAcquires[outAcquired])

	off := exact
	off.Leases.Losses = 1
	f = sharedFiguresOf(defaultConfig(), ops, []leaseRec{rd, wr}, nil, off, unexplained)
	assert.Equal(t, []string{"shared lease metrics not exact: leases lost: metrics 1, holders saw at least 2"}, f.violations)

	// A Read's error before its Shared agreed the limit may be uncounted.
	ops = append(ops, op{Holder: "rd2", Kind: kindAcquire, Key: sharedKey, Shared: roleReader, Outcome: outError, Unagreed: true})
	f = sharedFiguresOf(defaultConfig(), ops, []leaseRec{rd, wr}, nil, exact, unexplained)
	assert.True(t, f.MetricsExact, "%v", f.violations)
	ops[len(ops)-1].Unagreed = false
	f = sharedFiguresOf(defaultConfig(), ops, []leaseRec{rd, wr}, nil, exact, unexplained)
	assert.Equal(t, []string{"shared lease metrics not exact: readers' acquires error: metrics 0, holders saw 1 (0 before the limit's agreement)"}, f.violations)

	c := holderCounts(ops, []leaseRec{rd, wr})
	assert.Empty(t, c.Acquires, "the lock holders' counts leave the shared lease out")
	assert.Zero(t, c.Losses)
}

// TestWriterTakenBeforeALoss: a writer holds the key's lease and the
// permits from its Write's invoke on. A restart without persistence while
// it waits loses them; a reader that takes a permit after the restart,
// before or after the writer's Write returns, is beside it because Redis
// lost the writer's keys. Without the restart inside the writer's
// taking, it stays unexplained.
func TestWriterTakenBeforeALoss(t *testing.T) {
	const ms = int64(time.Millisecond)
	restart := []injected{{fault: fault{Kind: faultKill}, Start: 100 * ms, End: 150 * ms}}
	rd := readerRec("rd1", 0, 9, 200*ms, 400*ms)
	wr := writerRec("wr1", 5, 300*ms, 350*ms)
	wr.Taken = 50 * ms
	never := func(int, int64, int64) bool { return false }
	assert.Equal(t, overlapRedisLoss, explain(rd, wr, restart, nil, time.Second, 100*time.Millisecond, never))

	wr.Taken = 160 * ms // after the restart: it lost nothing of the writer's
	assert.Equal(t, overlapUnexplained, explain(rd, wr, restart, nil, time.Second, 100*time.Millisecond, never))
	wr.Taken = 0
	assert.Equal(t, overlapUnexplained, explain(rd, wr, restart, nil, time.Second, 100*time.Millisecond, never))

	// The writer returned first, holding a permit the restart lost; a
	// reader took that permit after the restart.
	wr, rd = writerRec("wr1", 5, 160*ms, 350*ms), readerRec("rd1", 0, 9, 200*ms, 400*ms)
	wr.Taken = 50 * ms
	assert.Equal(t, overlapRedisLoss, explain(wr, rd, restart, nil, time.Second, 100*time.Millisecond, never))
	wr.Taken = 0
	assert.Equal(t, overlapUnexplained, explain(wr, rd, restart, nil, time.Second, 100*time.Millisecond, never))
}

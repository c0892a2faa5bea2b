package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The election's checks and figures on small histories whose verdict is
// known.

func guarded(holder, key string, token int64, value string, invoke, ret int64) op {
	o := write(holder, key, token, value, outOK, invoke, ret)
	o.Reg = regGuard
	return o
}

// TestRepeatedTokens: a leader's guarded writes repeat its term's token,
// which the order checks and the register model accept on the election's
// guarded register only, and a token below is a stale write accepted
// there too.
func TestRepeatedTokens(t *testing.T) {
	term := []op{
		guarded("c1", electionKey, 10, "c1/1", 0, 10),
		guarded("c1", electionKey, 10, "c1/2", 20, 30),
		guarded("c2", electionKey, 20, "c2/1", 40, 50),
	}
	bad, _ := realTimeOrder(term)
	assert.Empty(t, bad)
	res, _, _ := linearizable(term, "", time.Minute)
	assert.Equal(t, "ok", res)
	log := []acceptEntry{{electionKey, 10, "c1/1"}, {electionKey, 10, "c1/2"}, {electionKey, 20, "c2/1"}}
	bad, _ = acceptOrder(regGuard, log)
	assert.Empty(t, bad)

	late := slices.Concat(term, []op{guarded("c1", electionKey, 10, "c1/3", 60, 70)})
	bad, offenders := realTimeOrder(late)
	require.Len(t, bad, 1)
	assert.Equal(t, "c1/3", offenders[0].Value)
	res, _, _ = linearizable(late, "", time.Minute)
	assert.Equal(t, "fail", res)
	bad, values := acceptOrder(regGuard, append(log, acceptEntry{electionKey, 10, "c1/3"}))
	assert.Len(t, bad, 1)
	assert.Equal(t, []string{"c1/3"}, values)

	// A lease key's guarded register, and the election key's fenced
	// stores, stay strict: each token once.
	twice := []op{guarded("a", "k1", 10, "a1", 0, 10), guarded("a", "k1", 10, "a2", 20, 30)}
	bad, _ = realTimeOrder(twice)
	assert.Len(t, bad, 1)
	bad, _ = acceptOrder(regGuard, []acceptEntry{{"k1", 10, "a1"}, {"k1", 10, "a2"}})
	assert.Len(t, bad, 1)
	bad, _ = acceptOrder(regPG, []acceptEntry{{electionKey, 10, "c1/1"}, {electionKey, 10, "c1/2"}})
	assert.Len(t, bad, 1)
}

// TestHandovers: the time without a leader runs from the latest end of
// the terms before a term (a stopped leader's from its stop) to its start,
// and counts for the stop's fault when the term that ended last was
// stopped, else for the main lane's.
func TestHandovers(t *testing.T) {
	sec := int64(time.Second)
	terms := []termRec{
		{Holder: "c1", Key: electionKey, Fence: 1, Start: 0, Done: 2 * sec, End: 2 * sec},
		{Holder: "c2", Key: electionKey, Fence: 2, Start: 2*sec + 10, Done: 4 * sec, End: 4 * sec},
		// c3's process was stopped from 5s to 9s: its work ended at 5s.
		{Holder: "c3", Proc: 3, Key: electionKey, Fence: 3, Start: 4*sec + 20, Done: 9 * sec, End: 9 * sec, Lost: true, Late: true},
		{Holder: "c1", Key: electionKey, Fence: 4, Start: 6 * sec, Done: 7 * sec, End: 7 * sec},
		{Holder: "c2", Key: electionKey, Fence: 5, Start: 12 * sec, Done: 13 * sec, End: 13 * sec},
	}
	pauseStart := func(proc int, from, to int64) (int64, bool) {
		return 5 * sec, proc == 3 && from <= 9*sec && to >= 5*sec
	}
	faults := []injected{
		{fault: fault{Kind: faultLeaderStop}, Start: 5 * sec, End: 9 * sec},
		{fault: fault{Kind: faultRedisStop}, Start: 5 * sec, End: 8 * sec},
	}
	cfg := testConfigPlain()
	e := electionFiguresOf(cfg, terms, nil, nil, faults, electionCounts{Started: 5, Lost: 1, Late: 1}, pauseStart)
	assert.Empty(t, e.violations)
	assert.True(t, e.MetricsExact)
	assert.Equal(t, time.Duration(10+20)+time.Second+5*time.Second, e.Leaderless)
	assert.Equal(t, 5*time.Second, e.Longest)

	rows := map[string]electionRow{}
	for _, r := range e.Rows {
		rows[r.Name] = r
	}
	// c1's term from 6s follows c3's stop. c2's from 12s follows c1's
	// term, which ended at 7s, before c3's resume: the time without a
	// leader began in redis-stop's tail (2 TTLs), the transition after it.
	assert.Equal(t, 1, rows["leader-stop"].Transitions)
	assert.Equal(t, time.Second, rows["leader-stop"].Leaderless)
	assert.Equal(t, 1, rows["leader-stop"].Lost)
	assert.Equal(t, 1, rows["leader-stop"].Late)
	assert.Zero(t, rows["redis-stop"].Transitions)
	assert.Equal(t, 5*time.Second, rows["redis-stop"].Leaderless)
	assert.Equal(t, 3, rows["no fault"].Transitions)
	assert.Equal(t, 4, rows["total"].Transitions)

	miscounted := electionFiguresOf(cfg, terms, nil, nil, faults, electionCounts{Started: 5, Lost: 1}, pauseStart)
	assert.False(t, miscounted.MetricsExact)
	assert.Len(t, miscounted.violations, 1)
}

// TestTermChecks: a leader stopped before a write past its TTL must have
// completed late; a lost term's function returns within the window of its
// loss, or of the end of the write the loss found under way.
func TestTermChecks(t *testing.T) {
	ms := int64(time.Millisecond)
	window := 100 * time.Millisecond
	assert.Len(t, termRec{Paused: true}.check(window, true), 1)
	assert.Empty(t, termRec{Paused: true, Late: true, Lost: true}.check(window, true))
	quick := termRec{Lost: true, Cancel: 100 * ms, End: 150 * ms}
	assert.Empty(t, quick.check(window, false))
	slow := termRec{Lost: true, Cancel: 100 * ms, End: 300 * ms}
	assert.Len(t, slow.check(window, false), 1)
	assert.Empty(t, slow.check(window, true), "a stopped process is the fence's to judge")
	inWrite := termRec{Lost: true, Cancel: 100 * ms, Write: 50 * ms, Wrote: 250 * ms, End: 300 * ms}
	assert.Empty(t, inWrite.check(window, false))
}

// testConfigPlain is a config for the figures alone: no servers.
func testConfigPlain() config {
	cfg := defaultConfig()
	cfg.seed = testSeed
	return cfg
}

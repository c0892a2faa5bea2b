package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run holders' checks on heartbeats whose verdict is known.

const ms = int64(time.Millisecond)

func beatsOf(t *testing.T, bs ...beat) *heartbeats {
	var lines []string
	for _, b := range bs {
		line, err := json.Marshal(b)
		require.NoError(t, err)
		lines = append(lines, string(line))
	}
	hb := newHeartbeats()
	var started []beat
	hb.read(strings.NewReader(strings.Join(lines, "\n")+"\nnot a heartbeat\n"), func(b beat) { started = append(started, b) })
	require.Len(t, started, 1, "each program's first heartbeat is handed on")
	return hb
}

func TestHeartbeatsWork(t *testing.T) {
	hb := beatsOf(t,
		beat{Holder: "r1", Fence: 7, Key: "k1", Pid: 10, Role: roleProgram, At: 100 * ms, Start: true, Seq: 3},
		beat{Holder: "r1", Fence: 7, Key: "k1", Pid: 10, Role: roleProgram, At: 200 * ms},
		beat{Holder: "r1", Fence: 7, Key: "k1", Pid: 11, Role: roleChild, At: 150 * ms},
		beat{Holder: "r1", Fence: 7, Key: "k1", Pid: 11, Role: roleChild, At: 900 * ms},
		beat{Holder: "r1", Fence: 7, Key: "k1", Pid: 12, Role: roleUnsupervised, At: 5000 * ms},
	)
	work := hb.work()
	require.Len(t, work, 1)
	assert.Equal(t, leaseRec{Holder: "r1", Key: "k1", Fence: 7, Acquired: 100 * ms, End: 900 * ms, Done: 900 * ms, Released: 900 * ms, Run: true}, work[0],
		"a program works until the last heartbeat with its fence, what it left behind included, the unsupervised left out")
	b, ok := hb.start("r1", 3)
	assert.True(t, ok)
	assert.Equal(t, 10, b.Pid)

	assert.Equal(t, []string{"r1's child (pid 11) heartbeated on k1 with fence 7 500ms after its lockwatch run had exited"},
		hb.after(map[workID]int64{{"r1", 7}: 400 * ms}, "its lockwatch run had exited"))
	assert.Empty(t, hb.after(map[workID]int64{{"r1", 7}: 900 * ms}, "its key expired in Redis"), "a heartbeat at the limit is not after it")
	total, unsupervised := hb.counts()
	assert.Equal(t, 5, total)
	assert.Equal(t, 1, unsupervised)
	assert.Equal(t, []int{10, 11, 12}, hb.pids())
}

// A program heartbeating while another holder's lease is live is an
// unexplained overlap whichever comes first; a stopped lockwatch explains
// nothing.
func TestRunOverlaps(t *testing.T) {
	never := func(int, int64, int64) bool { return false }
	program := leaseRec{Holder: "r1", Key: "k", Fence: 5, Acquired: 100 * ms, Done: 900 * ms, Released: 900 * ms, Run: true}
	lease := leaseRec{Holder: "g1", Key: "k", Fence: 6, Acquired: 600 * ms, Done: 1200 * ms, Released: 1200 * ms}
	found := overlaps([]leaseRec{program, lease}, []injected{{fault: fault{Kind: faultRunStop}, Start: 200 * ms, End: 2000 * ms}}, nil,
		time.Second, 100*time.Millisecond, never)
	require.Len(t, found, 1)
	assert.Equal(t, overlapUnexplained, found[0].why)
	assert.Equal(t, "g1 acquired k (fence 6) 300ms before r1's program's work (fence 5) ended: unexplained", found[0].String())

	later := leaseRec{Holder: "r2", Key: "k", Fence: 7, Acquired: 1100 * ms, Done: 1500 * ms, Released: 1500 * ms, Run: true}
	found = overlaps([]leaseRec{lease, later}, nil, nil, time.Second, 100*time.Millisecond, never)
	require.Len(t, found, 1)
	assert.Equal(t, "r2's program heartbeated on k (fence 7) 100ms before g1's lease (fence 6) ended: unexplained", found[0].String())

	restart := []injected{{fault: fault{Kind: faultKill}, Start: 500 * ms, End: 550 * ms}}
	found = overlaps([]leaseRec{program, lease}, restart, nil, time.Second, 100*time.Millisecond, never)
	require.Len(t, found, 1)
	assert.Equal(t, overlapRedisLoss, found[0].why, "a program's key lost in Redis explains it as for any lease")
}

func TestRunFigures(t *testing.T) {
	hb := beatsOf(t, beat{Holder: "r1", Fence: 9, Key: "k1", Pid: 10, Role: roleProgram, At: 100 * ms, Start: true, Seq: 1})
	margin := 100 * time.Millisecond
	fig := runFiguresOf([]runRec{
		{Holder: "r1", Seq: 1, Key: "k1", Status: 0, Exit: 500 * ms},
		{Holder: "r1", Seq: 2, Status: exitLost},
		{Holder: "r1", Seq: 3, Status: exitHeld},
		{Holder: "r1", Seq: 4, Status: exitUnknown},
		{Holder: "r1", Seq: 5, Status: exitUnavailable},
		{Holder: "r1", Seq: 6, Status: exitUsage, Grace: 2 * margin},
		{Holder: "r1", Seq: 7, Status: exitTerm, Termed: true},
		{Holder: "r2", Seq: 8, Key: "k2", Status: exitUsage, Grace: margin, Said: "lockwatch: --grace"},
		{Holder: "r2", Seq: 9, Key: "k2", Status: exitTerm, Said: "got terminated"},
		{Holder: "r2", Seq: 10, Key: "k3", Status: exitInternal, Said: "boom"},
	}, hb, margin, false)
	assert.Equal(t, runFigures{Runs: 10, Ran: 1, Programs: 1, Exit0: 1, Lost: 1, Held: 1, Unknown: 1, Down: 1, Refused: 1, Stopped: 1, Other: 3,
		exited: map[workID]int64{{"r1", 9}: 500 * ms},
		unexpected: []string{
			"r2: lockwatch run #10 on k3 exited 70: boom",
			"r2: lockwatch run #8 on k2 exited 64: lockwatch: --grace",
			"r2: lockwatch run #9 on k2 exited 143: got terminated",
		}}, fig, "a --grace within the margin must not be refused, and a SIGTERM only the run's end sends")
}

// TestElectFigures: a lockwatch elect runs a program per term it leads,
// each fence its own, and never exits 75 or 76, which are lockwatch run's.
func TestElectFigures(t *testing.T) {
	ms := int64(time.Millisecond)
	hb := newHeartbeats()
	for _, b := range []beat{
		{Holder: "c5", Fence: 7, Key: electionKey, Pid: 10, Role: roleProgram, At: 100 * ms, Start: true, Seq: 1},
		{Holder: "c5", Fence: 9, Key: electionKey, Pid: 11, Role: roleProgram, At: 300 * ms, Start: true, Seq: 1},
	} {
		hb.add(b)
	}
	fig := runFiguresOf([]runRec{
		{Holder: "c5", Elect: true, Seq: 1, Key: electionKey, Status: 0, Exit: 400 * ms},
		{Holder: "c5", Elect: true, Seq: 2, Key: electionKey, Status: exitHeld, Said: "held"},
	}, hb, time.Second/20, true)
	assert.Equal(t, 1, fig.Ran)
	assert.Equal(t, 2, fig.Programs)
	assert.Equal(t, map[workID]int64{{"c5", 7}: 400 * ms, {"c5", 9}: 400 * ms}, fig.exited)
	assert.Equal(t, 1, fig.Other)
	assert.Equal(t, []string{"c5: lockwatch elect #2 exited 75: held"}, fig.unexpected)
	assert.Contains(t, fig.String(), "lockwatch elect: 2 campaigns, 1 led, 2 programs run")
}

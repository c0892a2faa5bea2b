package model

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// The runs the conformance test replays: SPIN's random simulations of the
// SIM scenario (lease.pml), seeds 1 to seeds, each cut at spinSteps of the
// simulation (the Lockers have made all their attempts by then). The replay
// takes about a millisecond a step.
const (
	seeds     = 16
	spinSteps = 200000
	minSteps  = 5000 // the replayed server steps, at least
	minCopies = 100  // of them run by a late copy, at least
)

// FIFO's runs: record.lua's 16 bars, and Lockers of 60 attempts each, not
// one (told gone, a waiter's next attempt joins the tail; a leave without a
// reply makes a ghost), with room in the queue for their entries. The clock
// is longer than FIFO's (an entry lives 4 ticks, a lock 3, the cancel point
// at 2): entries outlive the lock, so a ghost's entry is often still queued
// when its Locker's next attempt sends it. About 7,000 steps, 580 of them
// grants, 30 acquires with a queued ghost.
var fifoRuns = run{
	defines:  []string{"-DSCENARIO=FIFO", "-DATT0=60", "-DATT1=60", "-DQN=8", "-DBARS=16", "-DQTTL=4", "-DTTL=3", "-DCA=2"},
	seeds:    30,
	steps:    400000,
	minSteps: 5000,
}

var simRuns = run{defines: []string{"-DSCENARIO=SIM"}, seeds: seeds, steps: spinSteps, minSteps: minSteps}

// run is how the replay's simulations are made: spin's defines, seeds 1 to
// seeds, each cut at steps of the simulation.
type run struct {
	defines  []string
	seeds    int
	steps    int
	minSteps int
}

// TestTheScriptsDoWhatTheModelSays replays random runs of the model against
// the real scripts on a real redis-server: every step the model's server
// took (acquire, renewal, release, clean-up, force, inspect, the resource's
// write; expiries and evictions as DELs, restarts and failovers as the keys
// the model says survive) runs the real script with the model's arguments
// (tokens and fences mapped to real ones), and its reply and the stored
// record (lock, fence, both bar lists with their marks) must be the
// model's, and it publishes nothing but the model's grants. Duplicated and
// late deliveries are the model's copies: their steps are counted.
func TestTheScriptsDoWhatTheModelSays(t *testing.T) {
	total := replayRuns(t, simRuns, false)
	require.GreaterOrEqual(t, total["copies"], minCopies, "too few late copies in the runs")
	for _, kind := range []string{"acquire", "renew", "release", "force", "inspect", "expire", "restart", "evict", "failover", "write"} {
		require.Positive(t, total[kind], "no %s step in any run", kind)
	}
}

// TestTheQueueScriptsDoWhatTheModelSays replays random runs of the FIFO
// scenario in the same way: the acquires queue (their entry TTL set), and
// the replay compares, beside the key, the wait queue's tokens in order and
// whether each entry is live, the grants published ("<owner> <fence>", each
// fence placed among the others, each on the grant channel of the granted
// attempt's Locker and on no other), and the refreshes' answers. The
// model's entries expire on its clock: the replay sets their expiry to the
// past then (@qexpire), as it deletes a lock that expires.
func TestTheQueueScriptsDoWhatTheModelSays(t *testing.T) {
	total := replayRuns(t, fifoRuns, true)
	require.GreaterOrEqual(t, total["grant"], 100, "too few hand-offs in the runs")
	require.Positive(t, total["queued ghost"], "no acquire sent a ghost whose entry was queued")
	for c := range replayLockers {
		require.Positive(t, total[fmt.Sprintf("grant to Locker %d", c)], "no grant to Locker %d's waiters", c)
	}
	for _, kind := range []string{"acquire", "release", "refresh", "grant", "qexpire", "expire"} {
		require.Positive(t, total[kind], "no %s step in any run", kind)
	}
}

// replayRuns replays the runs of rn against the real scripts and returns
// how many steps of each kind it replayed.
func replayRuns(t *testing.T, rn run, fifo bool) map[string]int {
	spin, err := exec.LookPath("spin")
	if err != nil {
		integration.Unavailable(t, "model", "spin", err)
	}
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := loadScripts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dir := t.TempDir() // spin writes its preprocessed model beside the file
	src, err := os.ReadFile("lease.pml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lease.pml"), src, 0o644))

	start := time.Now()
	total := map[string]int{}
	steps := 0
	for seed := 1; seed <= rn.seeds; seed++ {
		run := simulate(t, spin, dir, rn, seed)
		r, err := newReplay(ctx, c, s, fmt.Sprintf("seed%d", seed))
		require.NoError(t, err)
		r.fifo = fifo
		for i, st := range run {
			if err := r.run(st); err != nil {
				require.NoError(t, r.close())
				t.Fatalf("seed %d, step %d of %d: %v\n(replay the run: spin -T %s -n%d -u%d model/lease.pml)",
					seed, i+1, len(run), err, strings.Join(rn.defines, " "), seed, rn.steps)
			}
		}
		require.NoError(t, r.close())
		steps += len(run)
		for k, n := range r.count {
			total[k] += n
		}
	}
	t.Logf("%d seeds, %d steps replayed in %v: %v", rn.seeds, steps, time.Since(start).Round(time.Millisecond), total)
	require.GreaterOrEqual(t, steps, rn.minSteps, "the runs are too short to say much")
	return total
}

// simulate runs SPIN's random simulation of rn's scenario with seed and
// returns the steps its server printed.
func simulate(t *testing.T, spin, dir string, rn run, seed int) []step {
	t.Helper()
	args := append(append([]string{"-T"}, rn.defines...), fmt.Sprintf("-n%d", seed), fmt.Sprintf("-u%d", rn.steps), "lease.pml")
	cmd := exec.Command(spin, args...)
	cmd.Dir = dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	require.NoError(t, cmd.Run(), "spin: %s", stderr.String())
	var run []step
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "-------------") {
			// spin's own report, where the step limit cut the last step's line: the
			// run ends there
			break
		}
		if !strings.HasPrefix(line, "@") {
			if strings.Contains(line, "assertion violated") {
				t.Fatalf("seed %d: the model's own invariant failed in simulation: %s", seed, line)
			}
			continue
		}
		st, err := parseStep(line)
		require.NoError(t, err)
		run = append(run, st)
	}
	require.NoError(t, sc.Err())
	return run
}

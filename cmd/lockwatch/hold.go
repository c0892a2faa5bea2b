package main

import (
	"io"
	"os"
	"strconv"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// What lockwatch run and lockwatch elect share: a program that runs under a
// lease (a term is one), in its own process group, supervised until it and
// what it left are gone, and ended before the key can expire when the lease
// is lost.

// replicaUsage is the help of run's and elect's --replica. The name is
// lease's to check: newLocker makes a bad one a usage error.
const replicaUsage = "this process's `NAME` in other processes' refusals (\"K is held by replica NAME\") and in inspect: at most 64 bytes of [A-Za-z0-9._:-] (default none: \"held by another\")"

// holdFlags are the lease's TTL and the program's grace between SIGTERM and
// SIGKILL, which the TTL bounds.
type holdFlags struct{ ttl, grace time.Duration }

// checkHold validates --ttl and --grace of command cmd and fills in the
// grace default. The TTL's bounds are lease's to check (newLocker).
func (h *holdFlags) checkHold(cmd string, set map[string]bool) error {
	switch {
	case h.ttl <= 0:
		return usageErr(cmd, "--ttl must be positive")
	case h.grace < 0:
		return usageErr(cmd, "--grace must not be negative")
	case h.grace > h.maxGrace():
		return usageErr(cmd, "--grace %v is longer than half the lease's safety margin, TTL/20 = %v: the SIGKILL could come after the key can expire; give at most %v, or a longer --ttl",
			h.grace, h.maxGrace(), h.maxGrace())
	}
	if !set["grace"] {
		h.grace = h.maxGrace()
	}
	return nil
}

// margin is the lease's safety margin, lease's default made explicit: the
// default grace is tied to it, so the two cannot drift apart.
func (h *holdFlags) margin() time.Duration { return h.ttl / 10 }

// maxGrace is the longest --grace, and its default: half the margin. At a
// grace of the whole margin the SIGKILL is due one drift allowance (TTL/100
// + 2ms) before the key can expire, and a loaded host's scheduler was seen
// to deliver it 6-110 ms late (the chaos harness's run-ignore-term fault);
// the other half of the margin is that delay's room.
func (h *holdFlags) maxGrace() time.Duration { return h.margin() / 2 }

// beat is how often lockwatch tells its watchdog that it runs: a fourth of
// the margin, so that a lockwatch that stopped is told from one that beats
// (two beats missed) well within the margin.
func (h *holdFlags) beat() time.Duration { return max(h.margin()/4, time.Millisecond) }

// leaseEnv is the program's environment under a lease on key with fence f
// and token: lockwatch's own without the secrets, and the variables doc.go
// names.
func leaseEnv(key string, f int64, token fence.Token) []string {
	return append(programEnv(), envFence+"="+strconv.FormatInt(f, 10), envFenceToken+"="+token.String(), envKey+"="+key)
}

// job is a program to run under a lease.
type job struct {
	key    string
	grace  time.Duration
	path   string   // the program, as findProgram found it
	args   []string // args[0] is its name as given
	sigs   chan os.Signal
	stderr io.Writer
}

// runUnder starts the program under l with env and supervises it until it
// and what it left are gone (supervisor), then stops the watchdog w.
func (j *job) runUnder(l *lease.Lease, w *watchdog, env []string) (*supervisor, error) {
	catchJobSignals(j.sigs)
	p, err := startProgram(j.path, j.args, env)
	if err != nil {
		w.stop()
		return nil, err
	}
	ignoreTTOU()
	s := &supervisor{key: j.key, grace: j.grace, p: p, l: l, w: w, stderr: j.stderr}
	s.lost = s.run(j.sigs)
	w.stop()
	return s, nil
}

// status is how the supervised program ended, as lockwatch's status: 70 for
// a wait that failed, 79 for a lost lease whatever the program returned,
// else the program's own status (nil for 0).
func (s *supervisor) status() error {
	switch {
	case s.p.err != nil:
		return fail(exitInternal, "wait for %s: %v", s.p.cmd.Args[0], s.p.err)
	case s.lost != nil:
		return &exitError{code: exitLost}
	case s.p.status != 0:
		return &exitError{code: s.p.status}
	}
	return nil
}

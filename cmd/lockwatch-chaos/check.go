package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// realTimeOrder finds, among ops of one key (and register), every op whose
// token is at or below the token of an op that returned before it was
// invoked: for accepted writes a stale write accepted, for acquires a fence
// that went backwards. Ops overlapping in time have no order and are not
// compared. Tokens equal across two ops are reported however they overlap:
// a fence is never minted twice, and a register never accepts one twice,
// except a guard, which admits the several writes of one term (repeats):
// for those only a token below is reported.
func realTimeOrder(ops []op) (bad []string, offenders []op) {
	byKey := map[string][]op{}
	for _, o := range ops {
		byKey[o.Key+"/"+o.Reg] = append(byKey[o.Key+"/"+o.Reg], o)
	}
	for _, list := range byKey {
		byReturn := slices.Clone(list)
		slices.SortFunc(byReturn, func(a, b op) int { return cmp.Compare(a.Return, b.Return) })
		slices.SortFunc(list, func(a, b op) int { return cmp.Compare(a.Invoke, b.Invoke) })
		var maxTok int64
		var maxOp op
		j := 0
		seen := map[int64]op{}
		for _, o := range list {
			for j < len(byReturn) && byReturn[j].Return < o.Invoke {
				if byReturn[j].Fence > maxTok {
					maxTok, maxOp = byReturn[j].Fence, byReturn[j]
				}
				j++
			}
			if o.Fence < maxTok || o.Fence == maxTok && !repeats(o.Reg, o.Key) {
				bad = append(bad, fmt.Sprintf("%s %s %s by %s with fence %d after %s with fence %d had returned",
					o.Kind, o.Reg, o.Key, o.Holder, o.Fence, maxOp.Holder, maxTok))
				offenders = append(offenders, o)
			} else if prev, dup := seen[o.Fence]; dup && !repeats(o.Reg, o.Key) {
				bad = append(bad, fmt.Sprintf("%s %s %s: fence %d twice (%s and %s)", o.Kind, o.Reg, o.Key, o.Fence, prev.Holder, o.Holder))
				offenders = append(offenders, o)
			}
			seen[o.Fence] = o
		}
	}
	slices.Sort(bad)
	return bad, offenders
}

// acceptEntry is one write in the order a register applied it.
type acceptEntry struct {
	Key   string
	Fence int64
	Value string
}

// readAudit reads the SQL registers' audit log: the exact order in which
// PostgreSQL accepted each key's writes.
func readAudit(ctx context.Context, db *sql.DB) ([]acceptEntry, error) {
	rows, err := db.QueryContext(ctx, `SELECT key, fence, value FROM audit ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var log []acceptEntry
	for rows.Next() {
		var e acceptEntry
		if err := rows.Scan(&e.Key, &e.Fence, &e.Value); err != nil {
			return nil, err
		}
		log = append(log, e)
	}
	return log, rows.Err()
}

// acceptOrder checks the exact order in which register reg accepted its
// writes (the PostgreSQL audit log, the guarded register's accept log):
// every key's fences must strictly increase, or not decrease where one
// term's writes repeat its token (repeats). It returns one line per write
// accepted out of that order, and those writes' values.
func acceptOrder(reg string, log []acceptEntry) (bad []string, values []string) {
	last := map[string]int64{}
	for _, e := range log {
		if e.Fence < last[e.Key] || e.Fence == last[e.Key] && !repeats(reg, e.Key) {
			bad = append(bad, fmt.Sprintf("%s %s accepted %q with fence %d after fence %d", reg, e.Key, e.Value, e.Fence, last[e.Key]))
			values = append(values, e.Value)
		}
		last[e.Key] = max(last[e.Key], e.Fence)
	}
	return bad, values
}

// Register model for porcupine: a fenced register holds a value and the
// highest token it accepted.
type regState struct {
	Mark  int64
	Value string
}

type regInput struct {
	Write  bool
	Token  int64
	Value  string
	Repeat bool // a write the register accepts at its mark too (repeats)
}

// repeats reports whether the writes to key's register reg may repeat a
// token: an election leader writes the guarded register again and again
// in its term, and a Guard admits the several requests of one lease (and
// refuses an older lease's). The fenced stores are strict: a leader writes
// them once per term, at its start.
func repeats(reg, key string) bool { return reg == regGuard && key == electionKey }

type regOutput struct {
	Outcome string // ok, stale, unknown; for reads, ok
	Mark    int64
	Value   string
	Exact   bool
}

// registerModel is a fenced register. A write is accepted iff its token is
// above the mark (or at it, for a write that may repeat its token); a
// rejected write saw a mark at least its token (exactly the reported one
// when the store read it atomically); a write whose outcome is unknown may
// or may not have taken effect; a read returns the state.
// Nondeterministic because of the unknown writes.
var registerModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{regState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		if !in.Write {
			if out.Mark == s.Mark && out.Value == s.Value {
				return []any{s}
			}
			return nil
		}
		applied := regState{Mark: in.Token, Value: in.Value}
		above := in.Token > s.Mark || in.Repeat && in.Token == s.Mark
		switch out.Outcome {
		case outOK:
			if above {
				return []any{applied}
			}
		case outStale:
			if !above && (!out.Exact || out.Mark == s.Mark) {
				return []any{s}
			}
		case outUnknown:
			if above {
				return []any{s, applied}
			}
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		if !in.Write {
			return fmt.Sprintf("read() -> %q@%d", out.Value, out.Mark)
		}
		return fmt.Sprintf("write(%q@%d) -> %s", in.Value, in.Token, out.Outcome)
	},
	DescribeState: func(state any) string {
		s := state.(regState)
		return fmt.Sprintf("%q@%d", s.Value, s.Mark)
	},
}

// infinity is the return time of a write whose outcome is unknown: it may
// take effect at any moment after its call.
const infinity = math.MaxInt64

// linearizable checks each register's history. On an illegal history it
// writes porcupine's visualisation of that register to dir and returns the
// path. An ambiguous result (the checker timed out) is reported as such.
func linearizable(ops []op, dir string, timeout time.Duration) (result string, details []string, vis string) {
	model := registerModel.ToModel()
	byReg := map[string][]porcupine.Operation{}
	clients := map[string]int{}
	for _, o := range ops {
		if o.Kind == kindAcquire || o.Outcome == outError {
			continue
		}
		id, ok := clients[o.Holder]
		if !ok {
			id = len(clients)
			clients[o.Holder] = id
		}
		po := porcupine.Operation{ClientId: id, Call: o.Invoke, Return: o.Return,
			Input:  regInput{Write: o.Kind == kindWrite, Token: o.Fence, Value: o.Value, Repeat: repeats(o.Reg, o.Key)},
			Output: regOutput{Outcome: o.Outcome, Mark: o.Mark, Value: o.Value, Exact: o.Exact}}
		if o.Kind == kindWrite {
			po.Output = regOutput{Outcome: o.Outcome, Mark: o.Mark, Exact: o.Exact}
			if o.Outcome == outUnknown {
				po.Return = infinity
			}
		}
		name := o.Reg + "/" + o.Key
		byReg[name] = append(byReg[name], po)
	}
	names := make([]string, 0, len(byReg))
	for name := range byReg {
		names = append(names, name)
	}
	slices.Sort(names)
	result = "ok"
	for _, name := range names {
		res := porcupine.CheckOperationsTimeout(model, byReg[name], timeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			details = append(details, fmt.Sprintf("register %s: linearizability undecided within %v", name, timeout))
			if result == "ok" {
				result = "unknown"
			}
			continue
		}
		result = "fail"
		details = append(details, fmt.Sprintf("register %s: history not linearizable", name))
		if vis == "" && dir != "" {
			_, info := porcupine.CheckOperationsVerbose(model, byReg[name], timeout)
			path := fmt.Sprintf("%s/porcupine-%s.html", dir, sanitize(name))
			if err := porcupine.VisualizePath(model, info, path); err == nil {
				vis = path
			} else {
				details = append(details, fmt.Sprintf("visualisation of %s: %v", name, err))
			}
		}
	}
	return result, details, vis
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// lateWork checks that no holder went on with its cancellable work longer
// than window after it learnt of its lease's loss, except holders stopped on
// purpose, and that every holder stopped inside its Commit past its TTL
// finished as a late completion.
//
// Commit's fn is not cancelled by a loss (a half-done final write is worse
// than a finished one the fence can reject), so a loss that strikes while
// the final write runs is no overrun: the write completes, is counted as a
// late completion, and the fence decides. The work before Commit must stop.
func lateWork(leases []leaseRec, window time.Duration, pausedDuring func(proc int, from, to int64) bool) (bad []string, maxLatency time.Duration) {
	for _, r := range leases {
		if r.Paused && !r.Late {
			bad = append(bad, fmt.Sprintf("%s was stopped inside its Commit on %s (fence %d) but its write was not a late completion",
				r.Holder, r.Key, r.Fence))
		}
		if !r.Lost || r.Cancel == 0 || pausedDuring(r.Proc, r.Acquired, r.End) {
			continue
		}
		workEnd := r.End
		if r.Commit != 0 {
			if r.Cancel >= r.Commit {
				continue // lost during the final write: a late completion
			}
			workEnd = r.Commit
		}
		d := time.Duration(workEnd - max(r.Cancel, r.Reads))
		maxLatency = max(maxLatency, d)
		if d > window {
			bad = append(bad, fmt.Sprintf("%s ran %v of protected work on %s (fence %d) after its lease was lost (window %v)",
				r.Holder, d.Round(time.Millisecond), r.Key, r.Fence, window))
		}
	}
	return bad, maxLatency
}

// holderCounts are the counts of the history, to compare with the metrics.
// The permit and shared lease holders' acquires and leases count in
// their semaphores' telemetry (permitFiguresOf, sharedFiguresOf), their
// writes' rejections in the registers'.
func holderCounts(ops []op, leases []leaseRec) counts {
	c := counts{Acquires: map[string]int64{}}
	for _, o := range ops {
		switch {
		case o.Kind == kindAcquire && (o.Permit || o.Shared != ""):
		case o.Kind == kindAcquire:
			result := o.Outcome
			if result == outError {
				result = "error"
			}
			c.Acquires[result]++
		case o.Kind == kindWrite && o.Outcome == outStale:
			c.Rejections++
		}
	}
	for _, r := range leases {
		if r.Permit || r.Shared != "" {
			continue
		}
		if r.Lost {
			c.Losses++
		}
		if r.Late {
			c.Late++
		}
	}
	return c
}

// compareCounts lists every difference between two sets of counts: the
// metrics and the history, or what a child sent and what arrived.
func compareCounts(a, b counts, aName, bName string) []string {
	var diff []string
	check := func(what string, x, y int64) {
		if x != y {
			diff = append(diff, fmt.Sprintf("%s: %s %d, %s %d", what, aName, x, bName, y))
		}
	}
	check("fence rejections", a.Rejections, b.Rejections)
	check("leases lost", a.Losses, b.Losses)
	check("late completions", a.Late, b.Late)
	for _, r := range []string{outAcquired, outContended, outUnknown, "error"} {
		check("acquires "+r, a.Acquires[r], b.Acquires[r])
	}
	check("leases active at the end", a.Active, b.Active)
	check("work overrunning a lost lease at the end", a.Overrunning, b.Overrunning)
	check("callers waiting for a lease at the end", a.Waiting, b.Waiting)
	return diff
}

package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/lockwatch/lockwatch/lease"
)

// besideWriter finds, per shared key, every reader and writer whose live
// intervals intersect (by the live intervals of check 5), with why their
// overlap is allowed, if it is: a loss in Redis of the first one's key
// (a reader's permit is served where the key is), or its process
// stopped. Two writers live at once are check 5's (one key); readers
// live at once are the lease's purpose.
func besideWriter(leases []leaseRec, why func(a, b leaseRec) string) []overlap {
	byKey := map[string][]leaseRec{}
	for _, r := range leases {
		if r.Shared != "" {
			byKey[semaphoreOf(r.Key)] = append(byKey[semaphoreOf(r.Key)], r)
		}
	}
	var found []overlap
	for _, list := range byKey {
		slices.SortFunc(list, func(a, b leaseRec) int { return cmp.Compare(a.Acquired, b.Acquired) })
		for i, a := range list {
			for _, b := range list[i+1:] {
				if b.Acquired < a.liveUntil() && a.Shared != b.Shared {
					found = append(found, overlap{first: a, second: b, why: why(a, b)})
				}
			}
		}
	}
	slices.SortFunc(found, func(x, y overlap) int { return cmp.Compare(x.second.Acquired, y.second.Acquired) })
	return found
}

// sharedFigures are the shared lease holders' acquires, leases and
// writes, the overlaps of a reader and a writer, the readers live at once
// against the limit, and what the semaphore's counters recorded.
type sharedFigures struct {
	Readers, Writers, Limit int
	ReadAcquires            map[string]int // by outcome
	Unagreed                int            // readers' errors perhaps before the limit's agreement
	WriteAcquires           map[string]int
	Waited                  int // readers' acquires that could wait (every writer's waits)
	Reads, Writes           int // leases held: readers' permits, writers' leases
	Yielded                 int // readers lost yielding to a writer: expected
	ReadersLost             int // readers lost otherwise
	WritersLost, Late       int // writers lost; writes completed after the loss
	Accepted, Rejected      int // writers' writes to the key's registers
	Unknown                 int
	MaxReaders              int // the most readers live at once, explained overlaps included
	OverLimit               int // readers past the limit no loss in Redis explains
	Beside, BesideExplained int // a reader live beside a writer: unexplained, explained
	TwoWriters              int // overlaps of two writers (check 5's), explained or not
	Metrics                 permitCounts
	MetricsExact            bool
	violations              []string
}

// sharedFiguresOf sums up the shared lease holders' history and checks
// it: a reader live beside a writer (besideWriter), more readers live
// than the limit (overLimits), and the semaphore's counters against the
// history. (Two writers live at once, two readers of one permit, and
// stale writes are checks 1, 2 and 5's: a writer's token is the key's.)
func sharedFiguresOf(cfg config, ops []op, leases []leaseRec, found []overlap, metrics permitCounts,
	why func(a, b leaseRec) string) sharedFigures {
	f := sharedFigures{Readers: cfg.sharedReaders, Writers: cfg.sharedWriters, Limit: cfg.sharedLimit,
		ReadAcquires: map[string]int{}, WriteAcquires: map[string]int{}, Metrics: metrics}
	f.countOps(ops)
	var readers []leaseRec
	for _, r := range leases {
		switch r.Shared {
		case roleReader:
			f.Reads++
			r.Permit = true // for overLimits and maxLive, which count permits
			readers = append(readers, r)
		case roleWriter:
			f.Writes++
		}
		f.countLoss(r)
	}
	for _, o := range found {
		if o.first.Shared == roleWriter && o.second.Shared == roleWriter {
			f.TwoWriters++
		}
	}
	f.MaxReaders = maxLive(readers)
	for _, o := range overLimits(readers, cfg.sharedLimit, why) {
		f.OverLimit++
		f.violations = append(f.violations, "readers over the limit: "+o.String())
	}
	for _, o := range besideWriter(leases, why) {
		if o.why != overlapUnexplained {
			f.BesideExplained++
			continue
		}
		f.Beside++
		f.violations = append(f.violations, "reader beside a writer: "+o.String())
	}
	f.compare()
	return f
}

// countOps counts the acquires by role and outcome, and the writers'
// writes (to the key's own registers) by outcome.
func (f *sharedFigures) countOps(ops []op) {
	for _, o := range ops {
		switch {
		case o.Kind == kindAcquire && o.Shared == roleReader:
			f.ReadAcquires[o.Outcome]++
			if o.Unagreed {
				f.Unagreed++
			}
			if o.Wait > 0 {
				f.Waited++
			}
		case o.Kind == kindAcquire && o.Shared == roleWriter:
			f.WriteAcquires[o.Outcome]++
		case o.Kind == kindWrite && o.Key == sharedKey:
			switch o.Outcome {
			case outOK:
				f.Accepted++
			case outStale:
				f.Rejected++
			default:
				f.Unknown++
			}
		}
	}
}

// countLoss counts a shared lease's loss: a reader's yield apart.
func (f *sharedFigures) countLoss(r leaseRec) {
	if r.Late {
		f.Late++
	}
	switch {
	case !r.Lost:
	case r.Shared == roleWriter:
		f.WritersLost++
	case r.Reason == string(lease.LossYielded):
		f.Yielded++
	case r.Shared == roleReader:
		f.ReadersLost++
	}
}

// compare checks the semaphore's counters against the history. Readers
// are its permits: acquires by result and losses exact. A writer records
// no acquire of its own, and its loss takes its permits' leases with
// it, as many as it still held: the leases' losses are at least the
// holders'. Late completions are exact, and nothing is held, waiting or
// active once every holder stopped.
func (f *sharedFigures) compare() {
	var diff metricDiffs
	for _, r := range []string{outAcquired, outContended, outUnknown} {
		diff.check("readers' acquires "+r, f.Metrics.Acquires[r], int64(f.ReadAcquires[r]))
	}
	// An error of a Read whose Shared had not agreed the limit yet may be
	// the agreement's, which the counter does not see.
	if e, seen := f.Metrics.Acquires[outError], int64(f.ReadAcquires[outError]); e > seen || e < seen-int64(f.Unagreed) {
		diff = append(diff, fmt.Sprintf("readers' acquires error: metrics %d, holders saw %d (%d before the limit's agreement)", e, seen, f.Unagreed))
	}
	readersLost := int64(f.Yielded + f.ReadersLost)
	diff.check("readers lost", f.Metrics.Losses, readersLost)
	if lost := readersLost + int64(f.WritersLost); f.Metrics.Leases.Losses < lost {
		diff = append(diff, fmt.Sprintf("leases lost: metrics %d, holders saw at least %d", f.Metrics.Leases.Losses, lost))
	}
	diff.check("late completions", f.Metrics.Leases.Late, int64(f.Late))
	diff.idle(f.Metrics, "readers' permits", "readers waiting", "shared leases' leases")
	f.MetricsExact = len(diff) == 0
	for _, d := range diff {
		f.violations = append(f.violations, "shared lease metrics not exact: "+d)
	}
}

func (f sharedFigures) print(w io.Writer) {
	fmt.Fprintf(w, "shared lease: %d readers, %d writers, limit %d; readers' acquires acquired %d, contended %d, unknown %d, error %d (%d could wait); "+
		"writers' acquires acquired %d, contended %d, unknown %d, error %d; reads %d, yielded to a writer %d, readers lost otherwise %d; "+
		"writes %d, writers lost %d, late completions %d; writers' writes accepted %d, stale rejected %d, unknown %d; "+
		"most readers live at once %d (limit %d), over the limit unexplained %d; reader beside a writer unexplained %d, explained %d; "+
		"overlaps of two writers %d; metrics exact %t\n",
		f.Readers, f.Writers, f.Limit, f.ReadAcquires[outAcquired], f.ReadAcquires[outContended], f.ReadAcquires[outUnknown], f.ReadAcquires[outError], f.Waited,
		f.WriteAcquires[outAcquired], f.WriteAcquires[outContended], f.WriteAcquires[outUnknown], f.WriteAcquires[outError],
		f.Reads, f.Yielded, f.ReadersLost, f.Writes, f.WritersLost, f.Late, f.Accepted, f.Rejected, f.Unknown,
		f.MaxReaders, f.Limit, f.OverLimit, f.Beside, f.BesideExplained, f.TwoWriters, f.MetricsExact)
}

// addShared checks the shared lease holders' history (sharedFiguresOf)
// and adds its figures and violations to the summary: a reader live
// beside a writer, or more readers than the limit, is an unexplained
// overlap, as two live holders of one lock key are.
func (s *summary) addShared(cfg config, ops []op, leases []leaseRec, faults []injected, fos []failover,
	metrics permitCounts, children []*child) {
	pausedDuring := func(proc int, from, to int64) bool {
		return proc > 0 && proc <= len(children) && children[proc-1].pausedDuring(from, to)
	}
	why := func(a, b leaseRec) string {
		return explain(a, b, faults, fos, cfg.ttl, cfg.cancelWindow(), pausedDuring)
	}
	held := slices.DeleteFunc(slices.Clone(leases), func(r leaseRec) bool { return r.Shared == "" })
	found := overlaps(held, faults, fos, cfg.ttl, cfg.cancelWindow(), pausedDuring)
	s.Shared = sharedFiguresOf(cfg, ops, held, found, metrics, why)
	s.UnexplainedOverlaps += s.Shared.Beside + s.Shared.OverLimit
	s.Violations = append(s.Violations, s.Shared.violations...)
}

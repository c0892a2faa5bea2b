package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// overLimit is a permit holder that began while limit or more other
// holders of its semaphore were live, and no loss in Redis and no stopped
// process explains enough of them: more than the limit held at once.
type overLimit struct {
	second leaseRec   // the holder that began
	live   []leaseRec // the others live then, unexplained
	limit  int
}

func (o overLimit) String() string {
	var held []string
	for _, r := range o.live {
		held = append(held, fmt.Sprintf("%s on %s (fence %d)", r.Holder, r.Key, r.Fence))
	}
	return fmt.Sprintf("%s acquired %s (fence %d) while %d holders of the limit %d were live: %s",
		o.second.Holder, o.second.Key, o.second.Fence, len(o.live), o.limit, strings.Join(held, ", "))
}

// semaphoreOf is the semaphore's key of a permit's key, "<key>#<index>".
func semaphoreOf(permitKey string) string {
	key, _, _ := strings.Cut(permitKey, "#")
	return key
}

// overLimits finds, per semaphore, every permit whose acquire found limit
// or more other holders live (by the live intervals of check 5, which
// each holder measured on the one clock), leaving out those whose
// overlap with it why explains (a loss in Redis of their permit's key, or
// their process stopped), as check 5 does for two leases of one key.
// Permits of one holder never overlap: it holds one at a time.
func overLimits(leases []leaseRec, limit int, why func(a, b leaseRec) string) []overLimit {
	bySem := map[string][]leaseRec{}
	for _, r := range leases {
		if r.Permit {
			bySem[semaphoreOf(r.Key)] = append(bySem[semaphoreOf(r.Key)], r)
		}
	}
	var found []overLimit
	for _, list := range bySem {
		slices.SortFunc(list, func(a, b leaseRec) int { return cmp.Compare(a.Acquired, b.Acquired) })
		for j, b := range list {
			var live []leaseRec
			for _, a := range list[:j] {
				if a.Holder != b.Holder && b.Acquired < a.liveUntil() && why(a, b) == overlapUnexplained {
					live = append(live, a)
				}
			}
			if len(live) >= limit {
				found = append(found, overLimit{second: b, live: live, limit: limit})
			}
		}
	}
	slices.SortFunc(found, func(x, y overLimit) int { return cmp.Compare(x.second.Acquired, y.second.Acquired) })
	return found
}

// maxLive is the most permits of one semaphore live at one instant, by
// the live intervals, explained or not.
func maxLive(leases []leaseRec) int {
	type edge struct {
		at    int64
		delta int
	}
	bySem := map[string][]edge{}
	for _, r := range leases {
		if r.Permit && r.liveUntil() > r.Acquired {
			k := semaphoreOf(r.Key)
			bySem[k] = append(bySem[k], edge{r.Acquired, 1}, edge{r.liveUntil(), -1})
		}
	}
	most := 0
	for _, edges := range bySem {
		// An end before a start at one instant: the intervals are open.
		slices.SortFunc(edges, func(x, y edge) int { return cmp.Or(cmp.Compare(x.at, y.at), cmp.Compare(x.delta, y.delta)) })
		n := 0
		for _, e := range edges {
			n += e.delta
			most = max(most, n)
		}
	}
	return most
}

// permitFigures are the permit holders' acquires, permits and writes, the
// most permits live at once against the limit, and what the semaphore's
// counters recorded.
type permitFigures struct {
	Holders, Limit int
	Acquires       map[string]int // by outcome
	Waited         int            // acquires that could wait (Config.Wait)
	Permits        int            // permits held
	Lost, Late     int            // permits lost; writes completed after the loss
	Accepted       int            // writes to the permits' registers, by outcome
	Rejected       int
	Unknown        int
	MaxLive        int // the most permits live at once, explained overlaps included
	OverLimit      int // acquires past the limit no loss in Redis explains
	PerPermit      int // overlaps of two holders of one permit, explained or not
	Metrics        permitCounts
	MetricsExact   bool
	violations     []string
}

// permitFiguresOf sums up the permit holders' history and checks it:
// more than the limit live at once (overLimits) and the semaphore's
// counters against the history. (Two holders of one permit live at once
// are check 5's, with the leases'; stale writes checks 1 and 2's.)
func permitFiguresOf(cfg config, ops []op, leases []leaseRec, found []overlap, metrics permitCounts,
	why func(a, b leaseRec) string) permitFigures {
	p := permitFigures{Holders: cfg.permitHolders, Limit: cfg.permitLimit, Acquires: map[string]int{}, Metrics: metrics}
	for _, o := range ops {
		switch {
		case o.Kind == kindAcquire && o.Permit:
			p.Acquires[o.Outcome]++
			if o.Wait > 0 {
				p.Waited++
			}
		case o.Kind == kindWrite && semaphoreOf(o.Key) == permitsKey && o.Key != permitsKey:
			switch o.Outcome {
			case outOK:
				p.Accepted++
			case outStale:
				p.Rejected++
			default:
				p.Unknown++
			}
		}
	}
	for _, r := range leases {
		if !r.Permit {
			continue
		}
		p.Permits++
		if r.Lost {
			p.Lost++
		}
		if r.Late {
			p.Late++
		}
	}
	for _, o := range found {
		if o.first.Permit {
			p.PerPermit++
		}
	}
	p.MaxLive = maxLive(leases)
	for _, o := range overLimits(leases, cfg.permitLimit, why) {
		p.OverLimit++
		p.violations = append(p.violations, "over the limit: "+o.String())
	}
	p.compare()
	return p
}

// compare checks the semaphore's counters against the history: acquires
// by result, permits lost (by the semaphore and by the permits' leases),
// late completions, and nothing held, waiting or active once every holder
// stopped.
func (p *permitFigures) compare() {
	var diff metricDiffs
	for _, r := range []string{outAcquired, outContended, outUnknown, outError} {
		diff.check("permit acquires "+r, p.Metrics.Acquires[r], int64(p.Acquires[r]))
	}
	diff.check("permits lost", p.Metrics.Losses, int64(p.Lost))
	diff.check("permits' leases lost", p.Metrics.Leases.Losses, int64(p.Lost))
	diff.check("late completions", p.Metrics.Leases.Late, int64(p.Late))
	diff.idle(p.Metrics, "permits", "callers waiting for a permit", "permits' leases")
	p.MetricsExact = len(diff) == 0
	for _, d := range diff {
		p.violations = append(p.violations, "permit metrics not exact: "+d)
	}
}

func (p permitFigures) print(w io.Writer) {
	fmt.Fprintf(w, "permits: %d holders, limit %d; acquires acquired %d, contended %d, unknown %d, error %d (%d could wait); "+
		"permits %d, lost %d, late completions %d; writes accepted %d, stale rejected %d, unknown %d; "+
		"most live at once %d (limit %d), over the limit unexplained %d; overlaps of one permit %d; metrics exact %t\n",
		p.Holders, p.Limit, p.Acquires[outAcquired], p.Acquires[outContended], p.Acquires[outUnknown], p.Acquires[outError], p.Waited,
		p.Permits, p.Lost, p.Late, p.Accepted, p.Rejected, p.Unknown, p.MaxLive, p.Limit, p.OverLimit, p.PerPermit, p.MetricsExact)
}

// addPermits checks the permit holders' history (permitFiguresOf) and
// adds its figures and violations to the summary: a holder past the limit
// is an unexplained overlap, as two live holders of one lock key are.
func (s *summary) addPermits(cfg config, ops []op, leases []leaseRec, faults []injected, fos []failover,
	metrics permitCounts, children []*child) {
	pausedDuring := func(proc int, from, to int64) bool {
		return proc > 0 && proc <= len(children) && children[proc-1].pausedDuring(from, to)
	}
	why := func(a, b leaseRec) string {
		return explain(a, b, faults, fos, cfg.ttl, cfg.cancelWindow(), pausedDuring)
	}
	held := slices.DeleteFunc(slices.Clone(leases), func(r leaseRec) bool { return !r.Permit })
	found := overlaps(held, faults, fos, cfg.ttl, cfg.cancelWindow(), pausedDuring)
	s.Permits = permitFiguresOf(cfg, ops, held, found, metrics, why)
	s.UnexplainedOverlaps += s.Permits.OverLimit
	s.Violations = append(s.Violations, s.Permits.violations...)
}

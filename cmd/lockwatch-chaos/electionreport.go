package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// electionFigures are the election's terms as the candidates saw them,
// its leaders' writes, and, per fault kind, what the faults cost it.
type electionFigures struct {
	Candidates, Procs         int // goroutines of this process, candidate processes
	Elects, Programs          int // lockwatch elect candidates, and the programs they ran, one per term
	Terms, Lost, Late, Paused int // terms; lost; late completions; stopped by leader-stop
	Accepted, Rejected        int // the leaders' writes, by outcome (every register)
	Unknown                   int
	// Leaderless is the time between terms: from one term's end (its
	// function's return or its context's end, or the stop of its process)
	// to the next term's start, summed, and its longest.
	Leaderless, Longest time.Duration
	Metrics             electionCounts // what the lockwatch_election_* counters recorded
	MetricsExact        bool
	Rows                []electionRow
	violations          []string
}

// electionRow is one line of the election's fault table.
type electionRow struct {
	Name                              string
	Injected, Transitions, Lost, Late int
	Rejected                          int
	Leaderless, Longest               time.Duration
}

// electionFiguresOf checks the terms and sums them up. Checks: a leader
// stopped by leader-stop before a write must have completed late; a lost
// term's function must return within the cancellation window of its
// context's end (from the end of the write batch the loss found under way,
// if any), unless its process was stopped; and the election's counters
// must equal the terms seen. (Overlapping terms are check 5's, with the
// leases'.) pauseStart gives the start of a stop of process proc between
// from and to, if any.
func electionFiguresOf(cfg config, terms []termRec, work []leaseRec, ops []op, faults []injected, metrics electionCounts,
	pauseStart func(proc int, from, to int64) (int64, bool)) electionFigures {
	e := electionFigures{Candidates: cfg.candidates, Procs: cfg.candProcs, Elects: cfg.elects, Terms: len(terms), Metrics: metrics}
	// A lockwatch elect program's work is its term's, from its first
	// heartbeat to the last of its fence: for the transitions and the time
	// without a leader. Its lockwatch keeps its counters.
	all := slices.Clone(terms)
	for _, w := range work {
		if w.Key == electionKey {
			e.Programs++
			all = append(all, termRec{Holder: w.Holder, Key: w.Key, Fence: w.Fence, Start: w.Acquired, Done: w.Done, End: w.Done})
		}
	}
	var events []electionEvent
	type termID struct {
		holder string
		fence  int64
	}
	stoppedTerms := map[termID]bool{}
	for _, t := range terms {
		// A stopped leader learns of its loss once resumed: the loss, and
		// its late completion, count where the stop began.
		at, stopped := pauseStart(t.Proc, t.Start, t.End)
		if !stopped {
			at = cmp.Or(t.Cancel, t.End)
		}
		stoppedTerms[termID{t.Holder, t.Fence}] = stopped
		e.violations = append(e.violations, t.check(cfg.cancelWindow(), stopped)...)
		if t.Lost {
			e.Lost++
			events = append(events, electionEvent{kind: evLost, at: at, stopped: stopped})
		}
		if t.Late {
			e.Late++
			events = append(events, electionEvent{kind: evLate, at: at, stopped: stopped})
		}
		if t.Paused {
			e.Paused++
		}
	}
	for _, o := range ops {
		if o.Kind != kindWrite || o.Key != electionKey {
			continue
		}
		switch o.Outcome {
		case outOK:
			e.Accepted++
		case outStale:
			e.Rejected++
			events = append(events, electionEvent{kind: evRejected, at: o.Invoke, stopped: stoppedTerms[termID{o.Holder, o.Fence}]})
		default:
			e.Unknown++
		}
	}
	events = append(events, handovers(all, pauseStart)...)
	for _, ev := range events {
		if ev.kind == evLeaderless {
			e.Leaderless += ev.d
			e.Longest = max(e.Longest, ev.d)
		}
	}
	e.Rows = attributeElection(cfg.topology.faults(), faults, 2*cfg.ttl, events)
	seen := electionCounts{Started: int64(e.Terms), Lost: int64(e.Lost), Late: int64(e.Late)}
	e.MetricsExact = metrics == seen
	if !e.MetricsExact {
		e.violations = append(e.violations, fmt.Sprintf("election metrics not exact: counters %+v, candidates saw %+v", metrics, seen))
	}
	return e
}

// check applies the checks of one term.
func (t termRec) check(window time.Duration, stopped bool) []string {
	var bad []string
	if t.Paused && !t.Late {
		bad = append(bad, fmt.Sprintf("%s was stopped before a write in term %d, past its TTL, but the term did not complete late", t.Holder, t.Fence))
	}
	if !t.Lost || t.Cancel == 0 || stopped {
		return bad
	}
	from := t.Cancel
	if t.Write <= t.Cancel && t.Cancel <= t.Wrote {
		from = t.Wrote // the loss found a write batch under way
	}
	if d := time.Duration(t.End - from); d > window {
		bad = append(bad, fmt.Sprintf("%s led on for %v in term %d after it was lost (window %v)", t.Holder, d.Round(time.Millisecond), t.Fence, window))
	}
	return bad
}

// handovers are the transitions between terms (every term's start but the
// first) and the time without a leader before each: from the latest end of
// the terms before it (its function's return or its context's end; the
// start of its process's stop, if it was stopped), when that is before its
// start. Both are the stop's when the term that ended last was stopped.
func handovers(terms []termRec, pauseStart func(proc int, from, to int64) (int64, bool)) []electionEvent {
	sorted := slices.Clone(terms)
	slices.SortFunc(sorted, func(a, b termRec) int { return cmp.Compare(a.Start, b.Start) })
	var events []electionEvent
	var covered int64
	stopped := false // the term that ended at covered was stopped
	for i, t := range sorted {
		if i > 0 {
			events = append(events, electionEvent{kind: evTransition, at: t.Start, stopped: stopped})
			if t.Start > covered {
				events = append(events, electionEvent{kind: evLeaderless, at: covered, d: time.Duration(t.Start - covered), stopped: stopped})
			}
		}
		end := t.liveUntil()
		p, paused := pauseStart(t.Proc, t.Start, end)
		if paused {
			end = min(end, max(p, t.Start))
		}
		if end > covered {
			covered, stopped = end, paused
		}
	}
	return events
}

// The election's events, beside the fault table's.
const (
	evTransition eventKind = iota + 100 // a term started after another
	evLeaderless                        // the time without a leader before a term
	evLate                              // a late completion
)

type electionEvent struct {
	kind    eventKind
	at      int64
	d       time.Duration // evLeaderless: how long
	stopped bool          // caused by the stop of a leader's process
}

// attributeElection builds the election's table as attribute builds the
// fault table: each event counts for the fault active when it happened (a
// time without a leader when it began), or that ended at most tail before:
// of the election's lane when a leader's stop caused it, else of the main
// lane. The run holders' faults touch no server and no candidate, and
// have no row.
func attributeElection(kinds []faultKind, faults []injected, tail time.Duration, events []electionEvent) []electionRow {
	var rows []electionRow
	index := map[string]int{}
	get := func(name string) *electionRow {
		if i, ok := index[name]; ok {
			return &rows[i]
		}
		index[name] = len(rows)
		rows = append(rows, electionRow{Name: name})
		return &rows[len(rows)-1]
	}
	for _, k := range kinds {
		if !k.runLane() {
			get(string(k))
		}
	}
	for _, f := range faults {
		if !f.Kind.runLane() {
			get(string(f.Kind)).Injected++
		}
	}
	for _, ev := range events {
		lane := func(k faultKind) bool { return !k.runLane() && !k.electLane() }
		if ev.stopped {
			lane = faultKind.electLane
		}
		name := "no fault"
		if f, ok := activeFault(faults, ev.at, tail, lane); ok {
			name = string(f.Kind)
		}
		r := get(name)
		switch ev.kind {
		case evTransition:
			r.Transitions++
		case evLost:
			r.Lost++
		case evLate:
			r.Late++
		case evRejected:
			r.Rejected++
		case evLeaderless:
			r.Leaderless += ev.d
			r.Longest = max(r.Longest, ev.d)
		}
	}
	total := electionRow{Name: "total"}
	for _, r := range rows {
		total.Injected += r.Injected
		total.Transitions += r.Transitions
		total.Lost += r.Lost
		total.Late += r.Late
		total.Rejected += r.Rejected
		total.Leaderless += r.Leaderless
		total.Longest = max(total.Longest, r.Longest)
	}
	return append(rows, total)
}

// activeFault returns the latest fault of a lane (of a kind in) active at
// at, or that ended at most tail before.
func activeFault(faults []injected, at int64, tail time.Duration, in func(faultKind) bool) (injected, bool) {
	for _, f := range slices.Backward(faults) {
		if in(f.Kind) && f.Start <= at && at <= f.End+int64(tail) {
			return f, true
		}
	}
	return injected{}, false
}

// print writes the election's line and table.
func (e electionFigures) print(w io.Writer) {
	fmt.Fprintf(w, "election %s: %d candidates (%d goroutines, %d processes, %d lockwatch elects), %d terms and %d lockwatch elect programs, %d lost, %d late completions (%d stopped before a write); leaders' writes accepted %d, stale rejected %d, unknown %d; without a leader %v in all, longest %v; election metrics exact %t\n",
		electionKey, e.Candidates+e.Procs+e.Elects, e.Candidates, e.Procs, e.Elects, e.Terms, e.Programs, e.Lost, e.Late, e.Paused, e.Accepted, e.Rejected, e.Unknown,
		e.Leaderless.Round(time.Millisecond), e.Longest.Round(time.Millisecond), e.MetricsExact)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tinjected\ttransitions\tterms lost\tlate completions\tstale writes rejected\twithout a leader\tlongest\t")
	for _, r := range e.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%v\t%v\t\n", r.Name, r.Injected, r.Transitions, r.Lost, r.Late, r.Rejected,
			r.Leaderless.Round(time.Millisecond), r.Longest.Round(time.Millisecond))
	}
	_ = tw.Flush()
}

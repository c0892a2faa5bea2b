package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// summary is the outcome of a run.
type summary struct {
	Seed            uint64
	Duration        time.Duration
	Ops             int
	Faults          int
	StaleAccepted   int
	OrderViolations int
	// UnexplainedOverlaps counts two holders of one key with live contexts
	// that no loss in Redis and no stopped process explains.
	UnexplainedOverlaps int
	Linearizable        string // ok, fail, unknown
	MetricsExact        bool
	Visualization       string // porcupine's HTML, when a register failed

	Fired       map[faultKind]int
	Rows        []row
	Metrics     counts
	Seen        counts
	Overlaps    map[string]int // by explanation (overlapRedisLoss, overlapStopped, overlapUnexplained)
	LateCancels int            // contexts live past the cancel window after Err reported the loss
	MaxCancel   time.Duration  // slowest stop of a non-paused holder after its loss
	Guard       guardFigures   // the guarded register's writes
	Runs        runFigures     // the lockwatch run holders' runs and heartbeats
	Elections   electionFigures
	Elects      runFigures // the lockwatch elect candidates' campaigns
	Permits     permitFigures
	Shared      sharedFigures
	Failovers   []failoverFigure
	staleOps    []op       // the stale writes accepted, for the timeline
	injected    []injected // the faults as they happened
	Violations  []string   // every violation, one line each
}

// guardFigures are the guarded register's writes, by what the holders saw,
// and its accept log: one Guard over four entry points is serialized only
// if the log is in order, and it shows whether the workload reached each.
type guardFigures struct {
	Accepted, Rejected, Busy, Unknown int
	ByVia                             map[string]int // accepted writes by entry point
	Logged, OutOfOrder                int            // accept log entries; those at or below an earlier fence
}

func guardedFigures(ops []op, logged, outOfOrder int) guardFigures {
	g := guardFigures{ByVia: map[string]int{}, Logged: logged, OutOfOrder: outOfOrder}
	for _, o := range ops {
		if o.Kind != kindWrite || o.Reg != regGuard {
			continue
		}
		switch o.Outcome {
		case outOK:
			g.Accepted++
			g.ByVia[o.Via]++
		case outStale:
			g.Rejected++
		case outError:
			g.Busy++
		default:
			g.Unknown++
		}
	}
	return g
}

// row is one line of the fault table.
type row struct {
	Name                                        string
	Injected, Lost, Unknown, Rejected, Accepted int
	Overlaps, Unexplained, LateCancels          int
}

// ok reports whether the run found no violation at all.
func (s summary) ok() bool { return len(s.Violations) == 0 }

// line is the last line of the output, in the form the issue fixed.
func (s summary) line() string {
	return fmt.Sprintf("chaos: seed=%d duration=%v ops=%d faults=%d stale_accepted=%d order_violations=%d unexplained_overlaps=%d linearizable=%s metrics_exact=%t",
		s.Seed, s.Duration.Round(time.Second), s.Ops, s.Faults, s.StaleAccepted, s.OrderViolations, s.UnexplainedOverlaps, s.Linearizable, s.MetricsExact)
}

// attribute builds the table: each event counts for the fault of its lane
// that was active when it happened, or that ended at most tail before it
// (a fault's effects outlive it: a lease taken during a blackhole is lost
// a TTL later).
func attribute(kinds []faultKind, faults []injected, tail time.Duration, events []event) []row {
	rows := map[string]*row{}
	var order []string
	get := func(name string) *row {
		if r, ok := rows[name]; ok {
			return r
		}
		rows[name] = &row{Name: name}
		order = append(order, name)
		return rows[name]
	}
	for _, k := range kinds {
		get(string(k))
	}
	for _, f := range faults {
		get(string(f.Kind)).Injected++
	}
	for _, e := range events {
		name := "no fault"
		for _, f := range slices.Backward(faults) {
			if f.Kind.runLane() == e.run && f.Start <= e.at && e.at <= f.End+int64(tail) {
				name = string(f.Kind)
				break
			}
		}
		r := get(name)
		switch e.kind {
		case evLost:
			r.Lost++
		case evUnknown:
			r.Unknown++
		case evRejected:
			r.Rejected++
		case evAccepted:
			r.Accepted++
		case evOverlap:
			r.Overlaps++
		case evUnexplained:
			r.Unexplained++
		case evLateCancel:
			r.LateCancels++
		}
	}
	out := make([]row, 0, len(order)+1)
	total := row{Name: "total"}
	for _, name := range order {
		r := *rows[name]
		out = append(out, r)
		total.Injected += r.Injected
		total.Lost += r.Lost
		total.Unknown += r.Unknown
		total.Rejected += r.Rejected
		total.Accepted += r.Accepted
		total.Overlaps += r.Overlaps
		total.Unexplained += r.Unexplained
		total.LateCancels += r.LateCancels
	}
	return append(out, total)
}

type eventKind int

const (
	evLost eventKind = iota
	evUnknown
	evRejected
	evAccepted
	evOverlap     // a lease acquired while another holder's context was live
	evUnexplained // ... and neither a loss in Redis nor a stopped process explains it
	evLateCancel  // a context live past the window after Err reported the loss
)

type event struct {
	kind eventKind
	at   int64
	run  bool // the run lane's (runfaults.go)
}

// print writes the table, the violations and, last, the summary line.
func (s summary) print(w io.Writer) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tinjected\tleases lost\tunknown acquires\tstale writes rejected\tstale writes accepted\toverlaps\tunexplained\tlate cancels\t")
	for _, r := range s.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Name, r.Injected, r.Lost, r.Unknown, r.Rejected, r.Accepted,
			r.Overlaps, r.Unexplained, r.LateCancels)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	var reasons []string
	for _, k := range sortedKeys(s.Metrics.LossReasons) {
		if n := s.Metrics.LossReasons[k]; n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s %d", k, n))
		}
	}
	fmt.Fprintf(w, "metrics: acquires acquired %d, contended %d, unknown %d, error %d; losses %d (%s); fence rejections %d; late completions %d\n",
		s.Metrics.Acquires[outAcquired], s.Metrics.Acquires[outContended], s.Metrics.Acquires[outUnknown], s.Metrics.Acquires["error"],
		s.Metrics.Losses, strings.Join(reasons, ", "), s.Metrics.Rejections, s.Metrics.Late)
	fmt.Fprintf(w, "slowest stop after a loss (holders not stopped on purpose): %v\n", s.MaxCancel.Round(10*time.Microsecond))
	fmt.Fprintf(w, "overlaps of live holders: %d explained by a loss in Redis, %d by a stopped holder process, %d unexplained; late cancels %d\n",
		s.Overlaps[overlapRedisLoss], s.Overlaps[overlapStopped], s.Overlaps[overlapUnexplained], s.LateCancels)
	var via []string
	for _, v := range guardEntryPoints {
		via = append(via, fmt.Sprintf("%s %d", v, s.Guard.ByVia[v]))
	}
	fmt.Fprintf(w, "guarded register: accepted %d (%s), stale rejected %d, busy %d, unknown %d; accept log %d writes, %d out of fence order\n",
		s.Guard.Accepted, strings.Join(via, ", "), s.Guard.Rejected, s.Guard.Busy, s.Guard.Unknown, s.Guard.Logged, s.Guard.OutOfOrder)
	if s.Runs.Runs > 0 {
		fmt.Fprintln(w, s.Runs)
	}
	if s.Elects.Runs > 0 {
		fmt.Fprintln(w, s.Elects)
	}
	if s.Elections.Candidates+s.Elections.Procs+s.Elections.Programs > 0 {
		s.Elections.print(w)
	}
	if s.Permits.Holders > 0 {
		s.Permits.print(w)
	}
	if s.Shared.Readers+s.Shared.Writers > 0 {
		s.Shared.print(w)
	}
	for _, f := range s.Failovers {
		fmt.Fprintln(w, f)
	}
	if s.Visualization != "" {
		fmt.Fprintf(w, "porcupine visualisation: %s\n", s.Visualization)
	}
	if len(s.Violations) > 0 {
		fmt.Fprintf(w, "VIOLATIONS (%d):\n", len(s.Violations))
		const show = 20
		for i, v := range s.Violations {
			if i == show {
				fmt.Fprintf(w, "  ... and %d more\n", len(s.Violations)-show)
				break
			}
			fmt.Fprintf(w, "  %s\n", v)
		}
	}
	fmt.Fprintln(w, s.line())
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

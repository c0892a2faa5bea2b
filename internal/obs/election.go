package obs

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The election side: package election reports a candidate's campaign and
// each of its terms. Election is the bounded election name, Identity the
// candidate's.

// Candidate is a candidate that starts to campaign.
type Candidate struct{ Election, Identity string }

// TermStart is a candidate that won a term.
type TermStart struct {
	Election, Identity string
	Fence              int64
	// Leaderless is the time without a leader before the term, as the new
	// leader measured it; negative when it could not tell.
	Leaderless time.Duration
}

// TermEnd is a term's end, once its lease was released.
type TermEnd struct {
	Election, Identity string
	Fence              int64
	Held               time.Duration // from the term's start to its release
	Change             TermChange    // TermResigned or TermLost
	Loss               LossReason    // when lost
	Late               bool          // the leader's function returned late
	Err                error         // the loss's cause, for the log
}

// Campaigning creates a candidate's series: its leader gauge at 0 (so that
// a candidate that never led shows, and "no leader" is a sum of zeros), and
// the election's counters at zero.
func (t *Recorder) Campaigning(ctx context.Context, ev Candidate) {
	t.leader.Add(ctx, 0, t.opts(AttrElection, ev.Election, AttrCandidate, ev.Identity).add...)
}

// StartTerm records a term's start (the leader gauge at 1, one term
// started, the election's newest term, the time without a leader) and
// starts its election.term span, a child of ctx's span, which EndTerm ends.
func (t *Recorder) StartTerm(ctx context.Context, ev TermStart) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, SpanTerm, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(AttrElection, ev.Election), attribute.String(AttrIdentity, ev.Identity), attribute.Int64(AttrFence, ev.Fence)))
	t.leader.Add(ctx, 1, t.opts(AttrElection, ev.Election, AttrCandidate, ev.Identity).add...)
	t.termChanges.Add(ctx, 1, t.election(ev.Election, AttrReason, string(TermStarted)).add...)
	one := t.election(ev.Election, "", "")
	t.mu.Lock()
	newest := t.terms[ev.Election]
	if ev.Fence > newest {
		t.terms[ev.Election] = ev.Fence
	}
	t.mu.Unlock()
	if ev.Fence > newest {
		t.term.Add(ctx, ev.Fence-newest, one.add...)
	}
	if ev.Leaderless >= 0 {
		t.leaderless.Record(ctx, ev.Leaderless.Seconds(), one.record...)
		span.SetAttributes(attribute.Float64(AttrLeaderless, ev.Leaderless.Seconds()))
	}
	return ctx, span
}

// EndTerm records a term's end (the leader gauge back to 0, the change,
// the term's length, a loss by reason, a late completion) and ends span,
// its election.term span. A loss and a late completion are logged at Warn.
func (t *Recorder) EndTerm(ctx context.Context, span trace.Span, ev TermEnd) {
	t.leader.Add(ctx, -1, t.opts(AttrElection, ev.Election, AttrCandidate, ev.Identity).add...)
	t.termChanges.Add(ctx, 1, t.election(ev.Election, AttrReason, string(ev.Change)).add...)
	t.leadership.Record(ctx, ev.Held.Seconds(), t.election(ev.Election, "", "").record...)
	span.SetAttributes(attribute.String(AttrReason, string(ev.Change)), attribute.Bool(AttrLate, ev.Late))
	who := []slog.Attr{slog.String(AttrElection, ev.Election), slog.String(AttrCandidate, ev.Identity), slog.Int64(AttrFence, ev.Fence)}
	if ev.Change == TermLost {
		t.electionLosses.Add(ctx, 1, t.election(ev.Election, AttrReason, string(ev.Loss)).add...)
		span.SetAttributes(attribute.String(AttrLoss, string(ev.Loss)))
		t.warn(ctx, "lockwatch: election term lost; the leader's work is cancelled and the candidate campaigns again",
			withErr(ev.Err, append(who, slog.String(AttrReason, string(ev.Loss)))...)...)
	}
	if ev.Late {
		t.electionLate.Add(ctx, 1, t.election(ev.Election, "", "").add...)
		t.warn(ctx, "lockwatch: leader's work returned after its term may have passed on; only the fence stops its writes", who...)
	}
	span.End()
}

// election returns the options for an election and one more attribute.
func (t *Recorder) election(name, key, value string) *attrOpts {
	return t.opts(AttrElection, name, key, value)
}

// Campaign is one candidate that runs (election's Run) in the process, as
// the debug page lists it.
type Campaign struct {
	Election, Identity string
	Leading            bool
	Term               int64     // the term it leads, else the last it led (0: none)
	Since              time.Time // when it started leading, or campaigning
}

// Campaigns are the candidates running in the process: package election
// adds each Run for as long as it runs, debugpage lists them.
var Campaigns = &campaigns{}

type campaigns struct{ registry[func() Campaign] }

// List returns the running candidates' states, by election, then
// identity, then term.
func (c *campaigns) List() []Campaign {
	states := c.all()
	out := make([]Campaign, 0, len(states))
	for _, s := range states {
		out = append(out, s())
	}
	slices.SortFunc(out, func(a, b Campaign) int {
		return cmp.Or(cmp.Compare(a.Election, b.Election), cmp.Compare(a.Identity, b.Identity), cmp.Compare(a.Term, b.Term))
	})
	return out
}

package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/units"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// The series of package election.
var (
	electionLeader     = metric(obs.PromElectionLeader)
	termChanges        = metric(obs.PromElectionTermChanges)
	electionTerm       = metric(obs.PromElectionTerm)
	leadershipDuration = metric(obs.PromElectionLeadershipDuration)
	leaderlessDuration = metric(obs.PromElectionLeaderlessDuration)
	electionLosses     = metric(obs.PromElectionLosses)
	electionLate       = metric(obs.PromElectionLateCompletions)
)

// byElection splits election series by election name.
var byElection = view{by: []string{obs.AttrElection}}

// electionPanels are the elections' row: who leads each election over
// time, every transition, the time without a leader and the terms' ends.
// Election series carry the election's name, not a lock name: the Lock
// variable does not filter them.
func electionPanels(first uint32) []cog.Builder[dashboard.Panel] {
	v := byElection
	return []cog.Builder[dashboard.Panel]{
		leaderTimeline(first),
		seriesPanel(first+1, "Term changes",
			"Terms by election and change: started, resigned (the leader released a live term) and lost. Every hand-over is a started with a resigned or a lost beside it; terms starting over and over fire LockwatchElectionFlapping.",
			units.OpsPerSecond, false,
			query{rate(termChanges, v.with(obs.AttrReason)), v.legend(label(obs.AttrReason))}),
		seriesPanel(first+2, "Newest term",
			"The fence of the newest term of each election a reporting candidate led: it steps up at every new term, and two candidates stepping it in turn are a hand-over each.",
			units.Short, false,
			query{"max by (" + obs.AttrElection + ") (" + selector(electionTerm, "") + ")", v.legend()}),
		seriesPanel(first+3, "Time without a leader",
			"Before each term, how long the election had no leader, as the new leader measured it on the Redis clock from the previous term's end: a round trip after a resignation, about a TTL after a leader vanished.",
			units.Seconds, true, percentiles(v, leaderlessDuration, 0.5, 0.99)...),
		seriesPanel(first+4, "Term length",
			"How long terms lasted, from the leader learning it leads to the term's release. Short terms are a leader that keeps losing its lease or returning.",
			units.Seconds, true, percentiles(v, leadershipDuration, 0.5, 0.99)...),
		seriesPanel(first+5, "Terms lost and late completions",
			"Terms lost, by the lease's loss reason (renewal_rejected, force_released, renewal_unknown, deadline, max_hold, closed), and leaders' functions that returned after their term may have passed on: their writes may overlap the next term's, and only the fence stops them.",
			units.OpsPerSecond, false,
			query{rate(electionLosses, v.with(obs.AttrReason)), v.legend(label(obs.AttrReason))},
			query{rate(electionLate, v.by), v.legend("late completions")}),
	}
}

// leaderTimeline shows, per election and candidate, when it led: one lane
// per candidate, green while its gauge is 1.
func leaderTimeline(id uint32) *statetimeline.PanelBuilder {
	by := []string{obs.AttrElection, obs.AttrCandidate}
	lead := dashboard.ValueMapping{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"0": {Text: ptr("standby"), Color: ptr("transparent")},
			"1": {Text: ptr("leading"), Color: ptr("green")},
		},
	}}
	return statetimeline.NewPanelBuilder().
		Id(id).
		Title("Who leads each election").
		Description("One lane per election and candidate (election.Config.Identity), green while the candidate leads: every change of colour is a transition. Two lanes of one election green at once for longer than a scrape interval is a deposed leader whose work still runs (LockwatchElectionMultipleLeaders); none green, an election without a leader (LockwatchElectionNoLeader).").
		Datasource(datasource()).
		WithTarget(target(query{gauge(electionLeader, by), label(obs.AttrElection) + " " + label(obs.AttrCandidate)}, refID(0), false)).
		Unit(units.Short).
		Mappings([]dashboard.ValueMapping{lead}).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		Thresholds(thresholds(threshold{1, "green"})).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		Legend(common.NewVizLegendOptionsBuilder().
			ShowLegend(true).
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeSingle).Sort(common.SortOrderNone)).
		Height(seriesHeight).
		Span(2 * seriesWidth)
}

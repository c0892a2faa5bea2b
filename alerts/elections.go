package alerts

import (
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// The labels of package election's series: the election's name, and the
// candidate's identity on the leader gauge.
const (
	labelElection  = obs.AttrElection
	labelCandidate = obs.AttrCandidate
)

// Election names of the test data.
const (
	testElection = "scheduler"
	testPodA     = "scheduler-7d9f-a"
	testPodB     = "scheduler-7d9f-b"
)

// gone is how far back LockwatchElectionCandidatesGone looks for an
// election's candidates: an election seen within it and not now has lost
// every candidate. Past it, the election is forgotten and the alert
// resolves; by then the platform's target-down alerts carry the outage.
const gone = time.Hour

// elections are the alerts on package election's series, one group.
func elections(q promql) []alert {
	byElection := labels(labelJob, labelElection)
	leaders := sumBy(byElection, q.sel(obs.PromElectionLeader))
	candidate := func(who string) map[string]string {
		return map[string]string{labelElection: testElection, labelCandidate: who}
	}
	election := map[string]string{labelElection: testElection}
	started := with(election, labelReason, string(obs.TermStarted))
	return []alert{
		{
			Group:       "lockwatch-election",
			Name:        "LockwatchElectionNoLeader",
			Severity:    warning,
			Value:       "1 - " + leaders,
			By:          byElection,
			Threshold:   0,
			For:         5 * time.Minute,
			Summary:     "An election's candidates are running, and none of them leads: the singleton's work is not being done.",
			Description: `No candidate of election {{ $labels.election }} (job {{ $labels.job }}) has reported leading for 5 minutes ({{ $value }} = 1 - the candidates leading).`,
			NoData:      noData{alerting.RuleNoDataStateOK, "no series: no candidate campaigns; an election whose candidates all vanished is LockwatchElectionCandidatesGone's"},
			Fires: testCase{
				About: "two candidates campaigning, neither leading from minute 3",
				Series: []series{
					{obs.PromElectionLeader, candidate(testPodA), "1x2 0x20"},
					{obs.PromElectionLeader, candidate(testPodB), "0x22"},
				},
				At:     10 * time.Minute,
				Labels: election,
				Value:  1,
			},
			Silent: testCase{
				About: "a hand-over from a to b, and a minute without a leader when a crashed and b waited out its TTL",
				Series: []series{
					{obs.PromElectionLeader, candidate(testPodA), "1x5 0x15"},
					{obs.PromElectionLeader, candidate(testPodB), "0x6 1x3 0 1x10"},
				},
				At: 15 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-election",
			Name:      "LockwatchElectionCandidatesGone",
			Severity:  warning,
			Value:     "(\n  count by (job, election) (max_over_time(" + q.sel(obs.PromElectionLeader) + "[" + promDuration(gone) + "]))\nunless on (job, election)\n  " + leaders + "\n)",
			By:        byElection,
			Threshold: 0,
			For:       5 * time.Minute,
			Summary:   "Every candidate of an election stopped reporting: nothing leads it, and nothing campaigns.",
			Description: `{{ $value }} candidates of election {{ $labels.election }} (job {{ $labels.job }}) reported within the last hour, and none has for 5 minutes: ` +
				`the processes are gone or no longer scraped, so nobody leads it.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series is the healthy answer: every election seen in the last hour has a candidate now; Alerting would fire while all is well"},
			Fires: testCase{
				About:  "the only candidate's series ends at minute 10",
				Series: []series{{obs.PromElectionLeader, candidate(testPodA), "1x10"}},
				At:     25 * time.Minute,
				Labels: election,
				Value:  1,
			},
			Silent: testCase{
				About: "a rollout: a's series ends at minute 10, b campaigns from minute 8 and leads from minute 11; another election's candidate campaigns without leading (LockwatchElectionNoLeader's business)",
				Series: []series{
					{obs.PromElectionLeader, candidate(testPodA), "1x10"},
					{obs.PromElectionLeader, candidate(testPodB), "_x7 0x3 1x20"},
					{obs.PromElectionLeader, map[string]string{labelElection: "outbox", labelCandidate: testPodA}, "0x30"},
				},
				At: 25 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-election",
			Name:      "LockwatchElectionMultipleLeaders",
			Severity:  warning,
			Value:     leaders,
			By:        byElection,
			Threshold: 1,
			// A hand-over seen through scrapes: the old leader's last
			// sample (1) stands until its next scrape while the new
			// leader's already says 1, so the sum is 2 for up to one scrape
			// interval (1m at the common default) after every hand-over.
			// Two minutes is three evaluations in a row at 1m: longer
			// than that overlap, short enough for a stuck deposed leader.
			For:     2 * time.Minute,
			Summary: "More than one candidate of an election reports leading: a deposed leader's work still runs.",
			Description: `{{ $value }} candidates of election {{ $labels.election }} (job {{ $labels.job }}) have reported leading at once for 2 minutes: ` +
				`a deposed leader's function has not returned since its term was lost, and only the fence stops its writes.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no candidate campaigns, so none leads twice"},
			Fires: testCase{
				About: "a stays at 1 after b's term started at minute 4",
				Series: []series{
					{obs.PromElectionLeader, candidate(testPodA), "1x20"},
					{obs.PromElectionLeader, candidate(testPodB), "0x3 1x17"},
				},
				At:     10 * time.Minute,
				Labels: election,
				Value:  2,
			},
			Silent: testCase{
				About: "hand-overs at minutes 4 and 9 whose old leader's last scrape still says 1 for one minute",
				Series: []series{
					{obs.PromElectionLeader, candidate(testPodA), "1x4 0x4 1x12"},
					{obs.PromElectionLeader, candidate(testPodB), "0x3 1x6 0x11"},
				},
				At: 12 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-election",
			Name:      "LockwatchElectionFlapping",
			Severity:  warning,
			Value:     sumBy(byElection, q.increase(obs.PromElectionTermChanges, eq(labelReason, string(obs.TermStarted)))),
			By:        byElection,
			Threshold: 3,
			// More than 3 terms in every 5 minutes for 10 minutes: a
			// rolling restart hands over once per leader restart (at most
			// a few in its minutes); a leader that keeps losing its term
			// starts one every Pause plus a TTL.
			For:     10 * time.Minute,
			Summary: "An election keeps changing leader: terms are lost or resigned again and again.",
			Description: `{{ $value | humanize }} terms of election {{ $labels.election }} (job {{ $labels.job }}) started in the last 5 minutes, ` +
				`and terms have kept starting that fast for 10 minutes: the singleton's work restarts with each.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no election is in use, so no term starts"},
			Fires: testCase{
				About:  "a term started every minute for 30 minutes",
				Series: []series{{obs.PromElectionTermChanges, started, "0+1x30"}},
				At:     20 * time.Minute,
				Labels: election,
				Value:  5,
			},
			Silent: testCase{
				About:  "a rolling restart: 3 terms in minutes 10 to 12, and none before or after",
				Series: []series{{obs.PromElectionTermChanges, started, "0x10 1 2 3x20"}},
				At:     15 * time.Minute,
			},
		},
	}
}

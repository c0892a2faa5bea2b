package alerts

import (
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// nameMetricsAbsent is the alert on a job whose lockwatch series vanished.
const nameMetricsAbsent = "LockwatchMetricsAbsent"

// absentLookback is how far back LockwatchMetricsAbsent looks for a job's
// series: a job seen within it and not now has gone silent. Past it, the
// job is forgotten and the alert resolves, so it spans a night and a
// weekend morning's triage.
const absentLookback = 24 * time.Hour

// presence are the series a process exports as soon as it uses lockwatch
// at all, one per name and instance: telemetry creates them at zero with
// the first event of a lock (lease active), a fenced resource (its
// rejections), an election (its term) and a semaphore (permits held). No
// series exists before that first event, so a process that has not used
// lockwatch yet exports none of lockwatch's series.
var presence = []string{
	obs.PromLeaseActive, obs.PromFenceRejections, obs.PromElectionTerm, obs.PromPermitsHeld,
}

// absent is the alert on a job that exported lockwatch's series within
// absentLookback and exports none now.
func absent(q promql) []alert {
	byJob := labels(labelJob)
	var seen, now []string
	for _, m := range presence {
		seen = append(seen, "present_over_time("+q.sel(m)+"["+promDuration(absentLookback)+"])")
		now = append(now, q.sel(m))
	}
	exported := "count by (job) (\n    " + strings.Join(now, "\n    or ") + "\n  )"
	// The jobs seen and silent, by their count of series over the
	// lookback, or 0 for a job exporting now: the query answers for every
	// job lockwatch ran in, and an empty answer means that the data
	// source holds none of lockwatch's series at all (Grafana's no-data).
	value := "(\n  count by (job) (\n    " + strings.Join(seen, "\n    or ") + "\n  )\nunless on (job)\n  " +
		exported + "\nor on (job)\n  0 * " + exported + "\n)"
	lease := map[string]string{labelLock: testLock}
	fenced := map[string]string{labelResource: testResource}
	other := map[string]string{labelJob: "billing-batch"}
	gone := []series{
		{obs.PromLeaseActive, lease, "1x10"},
		{obs.PromFenceRejections, fenced, "0x10"},
		{"process_cpu_seconds_total", nil, "0+1x40"},
	}
	back := []series{
		{obs.PromLeaseActive, lease, "1x10 _x24 1x5"},
		{obs.PromFenceRejections, fenced, "0x10 _x24 0x5"},
	}
	return []alert{{
		Group:     "lockwatch-telemetry",
		Name:      nameMetricsAbsent,
		Severity:  warning,
		Value:     value,
		By:        byJob,
		Threshold: 0,
		// A process's series come back with its first lock, resource,
		// election or semaphore after a restart: in seconds for a
		// service, within 15 minutes for most workers.
		For:     15 * time.Minute,
		Summary: "A job that exported lockwatch's metrics in the last day exports none now: its locks, fences and elections are unwatched.",
		Description: `Job {{ $labels.job }} exported {{ $value }} of lockwatch's series (one per lock, fenced resource, election and semaphore of each instance) in the last day and none for 15 minutes: ` +
			`its processes are down or no longer scraped, or run without lockwatch's telemetry, and every other lockwatch alert is blind to it.`,
		NoData: noData{alerting.RuleNoDataStateAlerting, "the query answers 0 for every job exporting now and the count for every silent one; " +
			"no series at all means the data source holds none of lockwatch's series for the job selector (a wrong data source uid or selector, or a Prometheus that lost its history), and the rules watch nothing"},
		Fires: testCase{
			About:  "a job's lock and fenced resource stop at minute 10 (the process still runs, scraped, without lockwatch's telemetry)",
			Series: gone,
			At:     31 * time.Minute,
			Value:  2,
		},
		Silent: testCase{
			About: "a job that never ran lockwatch, whose process is scraped and then goes away, beside a lockwatch job that keeps exporting",
			Series: []series{
				{"process_cpu_seconds_total", other, "0+1x10"},
				{"up", other, "1x10 0x20"},
				{obs.PromLeaseActive, lease, "1x30"},
			},
			At: 30 * time.Minute,
		},
		More: []testCase{
			{
				About:  "the series stop at minute 10, evaluated at 25: pending for 10 of its 15 minutes, not firing",
				Series: gone,
				At:     25 * time.Minute,
			},
			{
				About:  "the series stop at minute 10 and come back at 35: firing at 34",
				Series: back,
				At:     34 * time.Minute,
				Value:  2,
				Fires:  true,
			},
			{
				About:  "the series stop at minute 10 and come back at 35: resolved at 35",
				Series: back,
				At:     35 * time.Minute,
			},
			{
				About: "one of the job's two instances stops at minute 10: the job still exports",
				Series: []series{
					{obs.PromLeaseActive, lease, "1x10"},
					{obs.PromLeaseActive, with(lease, labelInstance, "127.0.0.1:9465"), "1x30"},
				},
				At: 30 * time.Minute,
			},
		},
	}}
}

package alerts

import (
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// labelSemaphore is the label of package permits' series: the semaphore's
// name.
const labelSemaphore = obs.AttrSemaphore

// testSemaphore is the semaphore name of the test data.
const testSemaphore = "exports"

// permits are the alerts on package permits' series, one group. A lost
// permit is a lost lease of the semaphore's lock name: LockwatchLeasesLost
// reports it, so no alert of this group repeats it.
func permits(q promql) []alert {
	bySemaphore := labels(labelJob, labelSemaphore)
	semaphore := map[string]string{labelSemaphore: testSemaphore}
	timedOut := with(semaphore, labelResult, string(obs.WaitTimedOut))
	acquired := with(semaphore, labelResult, string(obs.WaitAcquired))
	waits := obs.PromPermitsWaitDuration + "_count"
	// The held gauges are read at their peak over the window: a permit
	// handed from one process to the next between their scrapes dips the
	// sum for a moment, and a wait only times out once every permit was
	// held for all of its Config.Wait.
	full := "(\n    " + sumBy(bySemaphore, "max_over_time("+q.sel(obs.PromPermitsHeld)+"["+promDuration(window)+"])") +
		"\n  >=\n    max by (" + strings.Join(bySemaphore, ", ") + ") (" + q.sel(obs.PromPermitsLimit) + ")\n  )"
	return []alert{
		{
			Group:     "lockwatch-permits",
			Name:      "LockwatchPermitsSaturated",
			Severity:  warning,
			Value:     "(\n  " + sumBy(bySemaphore, q.rate(waits, eq(labelResult, string(obs.WaitTimedOut)))) + "\nand on (" + strings.Join(bySemaphore, ", ") + ")\n  " + full + "\n)",
			By:        bySemaphore,
			Threshold: 0,
			For:       10 * time.Minute,
			Summary:   "Every permit of a semaphore is held and callers waiting for one time out.",
			Description: `{{ $value | humanize }} waits a second for a permit of semaphore {{ $labels.semaphore }} (job {{ $labels.job }}) timed out over the last 5 minutes, ` +
				`with all its permits held, for 10 minutes: its holders keep them longer than callers wait (permits.Config.Wait), and those callers fail with ErrNotAcquired.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series is the healthy answer: no wait for a permit timed out while every permit was held"},
			Fires: testCase{
				About: "3 permits held by two processes, one of which hands its permit on at minutes 7 and 14 between scrapes; 6 waits a minute time out and 2 acquire",
				Series: []series{
					{obs.PromPermitsLimit, semaphore, "3x30"},
					{obs.PromPermitsHeld, semaphore, "2x30"},
					{obs.PromPermitsHeld, with(semaphore, labelInstance, "worker-2:9464"), "1x6 0 1x6 0 1x16"},
					{obs.PromPermitsLimit, with(semaphore, labelInstance, "worker-2:9464"), "3x30"},
					{waits, timedOut, "0+6x30"},
					{waits, acquired, "0+2x30"},
				},
				At:     15 * time.Minute,
				Labels: semaphore,
				Value:  0.1,
			},
			Silent: testCase{
				About: "all 3 permits held and every wait acquired; another semaphore whose waits time out while this job holds 2 of its 4 permits (the rest held by processes not scraped)",
				Series: []series{
					{obs.PromPermitsLimit, semaphore, "3x30"},
					{obs.PromPermitsHeld, semaphore, "3x30"},
					{waits, acquired, "0+6x30"},
					{waits, timedOut, "0x30"},
					{obs.PromPermitsLimit, map[string]string{labelSemaphore: "imports"}, "4x30"},
					{obs.PromPermitsHeld, map[string]string{labelSemaphore: "imports"}, "2x30"},
					{waits, map[string]string{labelSemaphore: "imports", labelResult: string(obs.WaitTimedOut)}, "0+6x30"},
				},
				At: 15 * time.Minute,
			},
		},
	}
}

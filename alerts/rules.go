package alerts

import (
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Severities: critical pages someone now, warning opens a ticket or a chat
// message for working hours.
const (
	critical = "critical"
	warning  = "warning"
)

// Alert names the Alertmanager example refers to.
const (
	nameStaleWriteSpike = "LockwatchStaleWriteSpike"
	nameFenceRejections = "LockwatchFenceRejections"
	nameStaleWrite      = "LockwatchStaleWrite"
)

// staleWriteWindow is the range of LockwatchStaleWrite's increase: one stale
// write keeps its ticket open for an hour, long enough to be read, where
// the 5-minute window of the other alerts would resolve it in minutes.
const staleWriteWindow = time.Hour

// tokenRefusals are the results of lockwatch_fence_checks_total for a token
// a resource refused before comparing it with its mark: never a stale write
// (lockwatch_fence_rejections_total does not count them), so the stale-write
// alerts ignore them and LockwatchFenceTokensRefused watches them.
var tokenRefusals = []string{
	string(obs.FenceForeign), string(obs.FenceForged), string(obs.FenceAhead),
	string(obs.FenceUnscoped), string(obs.FenceMalformed),
}

// alert is one alerting rule, in a form both the Prometheus and the Grafana
// output are written from: it fires while Value is above Threshold for For.
// Fires, Silent and More are its promtool tests, kept next to the rule so
// that no alert exists without them.
type alert struct {
	Group       string        // one group per concern
	Name        string        // CamelCase, prefixed Lockwatch
	Severity    string        // critical or warning
	Value       string        // PromQL: the measured quantity, one series per alert instance, from the counters
	Recorded    string        // if set, what the Prometheus rule reads instead: Value as a recorded series (recording.go)
	By          []string      // the labels of Value's series
	Threshold   float64       // fires while Value > Threshold
	For         time.Duration // how long the condition must hold
	Summary     string        // static
	Description string        // template: $value, $labels
	NoData      noData        // the Grafana-managed rule's state when its query returns no series, and why
	Fires       testCase      // data on which it fires
	Silent      testCase      // healthy data on which it must not
	More        []testCase    // further cases, each firing or silent as its Fires says
}

// testCase is one promtool test of an alert: input series and the moment of
// evaluation. A firing case names the labels and $value of the one alert
// instance it expects.
type testCase struct {
	About  string            // what the data shows
	Series []series          // input series, besides Config.TestLabels
	At     time.Duration     // eval_time
	Labels map[string]string // firing only: the instance's labels besides target labels and severity
	Value  float64           // firing only: $value at At
	Fires  bool              // in More: the alert fires at At (Fires and Silent say it by their place)
}

// series is one input series of a test case.
type series struct {
	Metric string
	Labels map[string]string
	Values string // promtool's expanding notation, one sample a minute from 0
}

// Lock and resource names of the test data.
const (
	testLock     = "POST /reports/{id}"
	testResource = "ledger"
)

// catalogue is every alert. The thresholds and durations are explained, one
// section per alert, in RUNBOOK.md.
func catalogue(q promql) []alert {
	byResource := labels(labelJob, labelResource)
	byLock := labels(labelJob, labelLock)
	byRefusal := labels(labelJob, labelResource, labelResult)
	lock := map[string]string{labelLock: testLock}
	resource := map[string]string{labelResource: testResource}
	// The observations of the wait histogram: one per wait, by result.
	waits := obs.PromLeaseWaitDuration + "_count"
	spike := []series{{obs.PromFenceRejections, resource, "0+6x20"}}
	oneStaleWrite := []series{{obs.PromFenceRejections, resource, "0 0 1x61"}}

	return []alert{
		{
			Group:     "lockwatch-fencing",
			Name:      nameStaleWriteSpike,
			Severity:  critical,
			Value:     sumBy(byResource, q.rate(obs.PromFenceRejections)),
			By:        byResource,
			Threshold: 0.05,
			For:       2 * time.Minute,
			Summary:   "Stale writes are being rejected at a resource: leases are lost while their work keeps writing.",
			Description: `{{ printf "%.2f" $value }} writes per second carrying a stale fencing token were rejected at resource {{ $labels.resource }} (job {{ $labels.job }}) over the last 5 minutes. ` +
				`The fence stopped them, but two holders believed they held the same lock; resources without a fence may be taking the same late writes.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no fenced resource checked a token (each has its counter from its first check on, at zero), so none rejected one; metrics that vanish are LockwatchMetricsAbsent's"},
			Fires: testCase{
				About:  "6 rejections a minute (0.1/s) for 20 minutes",
				Series: spike,
				At:     10 * time.Minute,
				Labels: resource,
				Value:  0.1,
			},
			Silent: testCase{
				About:  "one rejection a minute (0.017/s): an isolated trickle, the warning's business",
				Series: []series{{obs.PromFenceRejections, resource, "0+1x20"}},
				At:     10 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-fencing",
			Name:      nameFenceRejections,
			Severity:  warning,
			Value:     sumBy(byResource, q.increase(obs.PromFenceRejections)),
			By:        byResource,
			Threshold: 0,
			For:       15 * time.Minute,
			Summary:   "Writes with stale fencing tokens keep being rejected.",
			Description: `{{ $value | humanize }} writes carrying a stale fencing token were rejected at resource {{ $labels.resource }} (job {{ $labels.job }}) in the last 5 minutes, ` +
				`and rejections have gone on for 15 minutes.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no fenced resource checked a token, so none rejected one"},
			Fires: testCase{
				About:  "one rejection a minute for 30 minutes",
				Series: []series{{obs.PromFenceRejections, resource, "0+1x30"}},
				At:     20 * time.Minute,
				Labels: resource,
				Value:  5,
			},
			Silent: testCase{
				About:  "a burst of 5 rejections at minute 21, evaluated 4 minutes later",
				Series: []series{{obs.PromFenceRejections, resource, "0x20 5x20"}},
				At:     25 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-fencing",
			Name:      nameStaleWrite,
			Severity:  warning,
			Value:     sumBy(byResource, "increase("+q.sel(obs.PromFenceRejections)+"["+promDuration(staleWriteWindow)+"])"),
			By:        byResource,
			Threshold: 0,
			// One evaluation after the rejection's scrape: the hour's
			// increase cannot flicker, so waiting longer only delays the
			// ticket.
			For:     time.Minute,
			Summary: "A write with a stale fencing token was rejected: a holder wrote after its lease was lost.",
			Description: `{{ $value | humanize }} writes carrying a stale fencing token were rejected at resource {{ $labels.resource }} (job {{ $labels.job }}) in the last hour. ` +
				`The fence stopped them, but a holder kept writing after its lease was lost; resources without a fence may have taken its other writes.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no fenced resource checked a token, so none rejected one"},
			Fires: testCase{
				About:  "one stale write at minute 2, evaluated at minute 12",
				Series: oneStaleWrite,
				At:     12 * time.Minute,
				Labels: resource,
				Value:  1,
			},
			Silent: testCase{
				About: "no stale write: the resource's rejection counter at zero for 30 minutes while it accepts 10 writes a minute",
				Series: []series{
					{obs.PromFenceRejections, resource, "0x30"},
					{obs.PromFenceChecks, with(resource, labelResult, string(obs.FenceAccepted)), "0+10x30"},
				},
				At: 30 * time.Minute,
			},
			More: []testCase{
				{
					About:  "one stale write at minute 2, evaluated at minute 2: pending, not firing",
					Series: oneStaleWrite,
					At:     2 * time.Minute,
				},
				{
					About:  "one stale write at minute 2, evaluated at minute 63: out of the hour, resolved",
					Series: oneStaleWrite,
					At:     63 * time.Minute,
				},
				{
					About:  "the spike's data, 6 rejections a minute: the page fires too, and the Alertmanager example inhibits this ticket while it does",
					Series: spike,
					At:     10 * time.Minute,
					Labels: resource,
					Value:  60,
					Fires:  true,
				},
			},
		},
		{
			Group:    "lockwatch-fencing",
			Name:     "LockwatchFenceTokensRefused",
			Severity: warning,
			Value:    sumBy(byRefusal, q.increase(obs.PromFenceChecks, in(labelResult, tokenRefusals...))),
			By:       byRefusal,
			// Any refusal, in every 5-minute window for 20 minutes: a rollout
			// that misroutes a client for its duration (usually under 10
			// minutes, Kubernetes' default progressDeadlineSeconds) keeps
			// the 5-minute increase above zero for at most 15, and stays
			// silent; a client that keeps sending tokens the resource cannot
			// take, or a forger at one try in 5 minutes or more, opens a
			// ticket. RUNBOOK.md says more.
			Threshold: 0,
			For:       20 * time.Minute,
			Summary:   "Fencing tokens keep being refused at a resource: a client sends tokens it may not use, or someone forges them.",
			Description: `{{ $value | humanize }} fencing tokens were refused as {{ $labels.result }} at resource {{ $labels.resource }} (job {{ $labels.job }}) in the last 5 minutes, ` +
				`and refusals have gone on for 20 minutes. Each was a write refused before its token was compared with the resource's mark: the mark did not move, and the sender's write did not happen.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no fenced resource checked a token, so none refused one"},
			Fires: testCase{
				About:  "one forged token a minute for 40 minutes",
				Series: []series{{obs.PromFenceChecks, with(resource, labelResult, string(obs.FenceForged)), "0+1x40"}},
				At:     30 * time.Minute,
				Labels: with(resource, labelResult, string(obs.FenceForged)),
				Value:  5,
			},
			Silent: testCase{
				About: "a client misrouted for the 10 minutes of a rollout (10 foreign tokens a minute), evaluated while its last refusals still count; accepted, stale and late checks all along",
				Series: []series{
					{obs.PromFenceChecks, with(resource, labelResult, string(obs.FenceForeign)), "0x10 10+10x9 100x20"},
					{obs.PromFenceChecks, with(resource, labelResult, string(obs.FenceAccepted)), "0+100x40"},
					{obs.PromFenceChecks, with(resource, labelResult, string(obs.FenceRejected)), "0+1x40"},
					{obs.PromFenceChecks, with(resource, labelResult, string(obs.FenceLate)), "0+1x40"},
				},
				At: 23 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-acquire",
			Name:      "LockwatchUnknownAcquiresHigh",
			Severity:  warning,
			Value:     unknownAcquires.raw(q, byLock),
			Recorded:  q.sel(unknownAcquires.Ratio),
			By:        byLock,
			Threshold: 0.05,
			For:       10 * time.Minute,
			Summary:   "Acquires end with an unknown result: Redis is slow or unreachable.",
			Description: `{{ $value | humanizePercentage }} of acquires of lock {{ $labels.lock_name }} (job {{ $labels.job }}) ended unknown over the last 5 minutes: ` +
				`their requests were refused, and their keys may stay held for up to one TTL.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no lock had an acquire in 5 minutes (the ratio drops idle locks), so no request was refused"},
			Fires: testCase{
				About: "10% of acquires unknown",
				Series: []series{
					{obs.PromLeaseAcquires, with(lock, labelResult, string(obs.AcquireAcquired)), "0+90x30"},
					{obs.PromLeaseAcquires, with(lock, labelResult, string(obs.AcquireUnknown)), "0+10x30"},
				},
				At:     15 * time.Minute,
				Labels: lock,
				Value:  0.1,
			},
			Silent: testCase{
				About: "1% of acquires unknown, and an idle lock with no acquires at all",
				Series: []series{
					{obs.PromLeaseAcquires, with(lock, labelResult, string(obs.AcquireAcquired)), "0+99x30"},
					{obs.PromLeaseAcquires, with(lock, labelResult, string(obs.AcquireUnknown)), "0+1x30"},
					{obs.PromLeaseAcquires, map[string]string{labelLock: "idle", labelResult: string(obs.AcquireAcquired)}, "0x30"},
					{obs.PromLeaseAcquires, map[string]string{labelLock: "idle", labelResult: string(obs.AcquireUnknown)}, "0x30"},
				},
				At: 15 * time.Minute,
			},
		},
		{
			Group:    "lockwatch-wait",
			Name:     "LockwatchWaitSaturation",
			Severity: warning,
			Value: ratio(byLock,
				q.rate(waits, eq(labelResult, string(obs.WaitTimedOut))),
				q.rate(waits)),
			By:        byLock,
			Threshold: 0.5,
			For:       15 * time.Minute,
			Summary:   "Most waits for a lock time out: it is held longer than its callers wait.",
			Description: `{{ $value | humanizePercentage }} of the waits for lock {{ $labels.lock_name }} (job {{ $labels.job }}) ended timed out over the last 5 minutes, ` +
				`and most have for 15 minutes: its holders keep it longer than callers wait (lease.Config.Wait), and those callers fail with ErrNotAcquired.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: nobody waited for a lock in 5 minutes, so no wait timed out"},
			Fires: testCase{
				About: "6 of 10 waits a minute time out",
				Series: []series{
					{waits, with(lock, labelResult, string(obs.WaitAcquired)), "0+4x30"},
					{waits, with(lock, labelResult, string(obs.WaitTimedOut)), "0+6x30"},
				},
				At:     20 * time.Minute,
				Labels: lock,
				Value:  0.6,
			},
			Silent: testCase{
				About: "1 of 10 waits a minute times out, and another lock whose waits all timed out for 10 minutes, then stopped",
				Series: []series{
					{waits, with(lock, labelResult, string(obs.WaitAcquired)), "0+9x30"},
					{waits, with(lock, labelResult, string(obs.WaitTimedOut)), "0+1x30"},
					{waits, map[string]string{labelLock: "idle", labelResult: string(obs.WaitTimedOut)}, "0+5x10 50x20"},
				},
				At: 20 * time.Minute,
			},
		},
		{
			Group:    "lockwatch-renewal",
			Name:     "LockwatchRenewalFailuresHigh",
			Severity: warning,
			Value: ratio(byLock,
				q.rate(obs.PromLeaseRenewals, ne(labelResult, string(obs.RenewalRenewed))),
				q.rate(obs.PromLeaseRenewals)),
			By:        byLock,
			Threshold: 0.05,
			For:       10 * time.Minute,
			Summary:   "Lease renewals fail: leases are lost and their work cancelled.",
			Description: `{{ $value | humanizePercentage }} of renewals of lock {{ $labels.lock_name }} (job {{ $labels.job }}) were rejected or went unanswered over the last 5 minutes; ` +
				`every failed renewal loses its lease and cancels the work it protected.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no lease was renewed in 5 minutes, so none was held and none could be lost"},
			Fires: testCase{
				About: "10% of renewals unanswered",
				Series: []series{
					{obs.PromLeaseRenewals, with(lock, labelResult, string(obs.RenewalRenewed)), "0+18x30"},
					{obs.PromLeaseRenewals, with(lock, labelResult, string(obs.RenewalUnknown)), "0+2x30"},
				},
				At:     15 * time.Minute,
				Labels: lock,
				Value:  0.1,
			},
			Silent: testCase{
				About: "one rejected renewal in 301",
				Series: []series{
					{obs.PromLeaseRenewals, with(lock, labelResult, string(obs.RenewalRenewed)), "0+300x30"},
					{obs.PromLeaseRenewals, with(lock, labelResult, string(obs.RenewalRejected)), "0+1x30"},
				},
				At: 15 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-renewal",
			Name:      "LockwatchLeasesLost",
			Severity:  warning,
			Value:     sumBy(labels(labelJob, labelLock, labelReason), q.increase(obs.PromLeaseLosses, notIn(labelReason, string(obs.LossClosed), string(obs.LossYielded)))),
			By:        labels(labelJob, labelLock, labelReason),
			Threshold: 0,
			For:       15 * time.Minute,
			Summary:   "Leases keep being lost before their work finished.",
			Description: `{{ $value | humanize }} leases of lock {{ $labels.lock_name }} (job {{ $labels.job }}) were lost with reason {{ $labels.reason }} in the last 5 minutes, ` +
				`and losses have gone on for 15 minutes. Every loss cancels the work it protected.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no lock is in use (each has its counters from its first acquire on), so no lease was lost"},
			Fires: testCase{
				About:  "one lease lost a minute to unanswered renewals",
				Series: []series{{obs.PromLeaseLosses, with(lock, labelReason, string(obs.LossRenewalUnknown)), "0+1x30"}},
				At:     20 * time.Minute,
				Labels: with(lock, labelReason, string(obs.LossRenewalUnknown)),
				Value:  5,
			},
			Silent: testCase{
				About: "ten leases a minute given up by Locker.Close (graceful shutdowns) and ten readers yielding to writers",
				Series: []series{
					{obs.PromLeaseLosses, with(lock, labelReason, string(obs.LossClosed)), "0+10x30"},
					{obs.PromLeaseLosses, with(lock, labelReason, string(obs.LossYielded)), "0+10x30"},
				},
				At: 20 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-commit",
			Name:      "LockwatchNearExpiryCommitsHigh",
			Severity:  warning,
			Value:     nearExpiry.raw(q, byLock),
			Recorded:  q.sel(nearExpiry.Ratio),
			By:        byLock,
			Threshold: 0.1,
			For:       15 * time.Minute,
			Summary:   "Commits run with little lease validity left.",
			Description: `{{ $value | humanizePercentage }} of commits of lock {{ $labels.lock_name }} (job {{ $labels.job }}) ran below the near-expiry margin over the last 5 minutes: ` +
				`the work takes too long for the lease's TTL, or renewals are slow.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: nothing was committed in 5 minutes, so nothing was written late"},
			Fires: testCase{
				About: "20% of commits near expiry",
				Series: []series{
					{obs.PromLeaseCommits, with(lock, labelResult, string(obs.CommitCommitted)), "0+8x30"},
					{obs.PromLeaseCommits, with(lock, labelResult, string(obs.CommitNearExpiry)), "0+2x30"},
				},
				At:     20 * time.Minute,
				Labels: lock,
				Value:  0.2,
			},
			Silent: testCase{
				About: "5% of commits near expiry",
				Series: []series{
					{obs.PromLeaseCommits, with(lock, labelResult, string(obs.CommitCommitted)), "0+19x30"},
					{obs.PromLeaseCommits, with(lock, labelResult, string(obs.CommitNearExpiry)), "0+1x30"},
				},
				At: 20 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-cancellation",
			Name:      "LockwatchSlowCancellation",
			Severity:  warning,
			Value:     q.p99(obs.PromLeaseCancellationLatency, byLock),
			By:        byLock,
			Threshold: 1,
			For:       10 * time.Minute,
			Summary:   "Work keeps running long after its lease was lost.",
			Description: `The 99th percentile of the time from a lease's loss to the end of its work is {{ $value | humanizeDuration }} for lock {{ $labels.lock_name }} (job {{ $labels.job }}) over the last 5 minutes: ` +
				`work ignores its cancelled context for longer than the safety margin, so another holder may already be doing the same work.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no lease was lost in 5 minutes, so no work had to stop"},
			Fires: testCase{
				About:  "a minute's 10 cancellations: 8 within 0.5ms, 2 taking 2s",
				Series: histogramSeries(obs.PromLeaseCancellationLatency, lock, map[float64]int{0.0004: 8, 2: 2}),
				At:     15 * time.Minute,
				Labels: lock,
				Value:  2.425, // 1 + (2.5-1) × (9.9-8)/(10-8): linear within the (1, 2.5] bucket
			},
			Silent: testCase{
				About:  "a minute's 10 cancellations, all within 0.5ms",
				Series: histogramSeries(obs.PromLeaseCancellationLatency, lock, map[float64]int{0.0004: 10}),
				At:     15 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-cancellation",
			Name:      "LockwatchWorkOverrunningLostLease",
			Severity:  warning,
			Value:     sumBy(labels(labelJob, labelInstance, labelLock), q.sel(obs.PromLeaseOverrunning)),
			By:        labels(labelJob, labelInstance, labelLock),
			Threshold: 0,
			For:       5 * time.Minute,
			Summary:   "Work is still running after its lease was lost.",
			Description: `{{ $value | humanize }} pieces of work protected by lock {{ $labels.lock_name }} on {{ $labels.instance }} (job {{ $labels.job }}) are still running after their lease was lost, ` +
				`and work has been overrunning there for 5 minutes: another holder may be doing the same work.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no lock is in use (each has its gauge from its first acquire on), so no work runs on"},
			Fires: testCase{
				About:  "one piece of work running on from minute 3",
				Series: []series{{obs.PromLeaseOverrunning, lock, "0x2 1x20"}},
				At:     10 * time.Minute,
				Labels: lock,
				Value:  1,
			},
			Silent: testCase{
				About:  "one piece of work overrunning for 2 minutes so far: slow to stop, not stuck",
				Series: []series{{obs.PromLeaseOverrunning, lock, "0x6 1x3 0x20"}},
				At:     9 * time.Minute,
			},
		},
		{
			Group:     "lockwatch-cancellation",
			Name:      "LockwatchLateCompletions",
			Severity:  warning,
			Value:     sumBy(byLock, q.increase(obs.PromLeaseLateCompletions)),
			By:        byLock,
			Threshold: 0,
			For:       10 * time.Minute,
			Summary:   "Work completes after its lease was lost: possible stale writes.",
			Description: `{{ $value | humanize }} handlers of lock {{ $labels.lock_name }} (job {{ $labels.job }}) finished successfully after their lease was lost in the last 5 minutes, ` +
				`and late completions have gone on for 10 minutes. What they wrote to resources without a fence may have overwritten newer data.`,
			NoData: noData{alerting.RuleNoDataStateOK, "no series: no lock is in use, so no handler finished late"},
			Fires: testCase{
				About:  "one late completion a minute",
				Series: []series{{obs.PromLeaseLateCompletions, lock, "0+1x30"}},
				At:     20 * time.Minute,
				Labels: lock,
				Value:  5,
			},
			Silent: testCase{
				About:  "a single late completion at minute 16, evaluated 4 minutes later",
				Series: []series{{obs.PromLeaseLateCompletions, lock, "0x15 1x15"}},
				At:     20 * time.Minute,
			},
		},
	}
}

// with returns a copy of labels with one more.
func with(labels map[string]string, name, value string) map[string]string {
	return merge(labels, map[string]string{name: value})
}

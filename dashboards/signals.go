package dashboards

import (
	"fmt"
	"math"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
	"github.com/lockwatch/lockwatch/alerts"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// The metrics the panels read, from telemetry's table: a renamed series
// breaks the generator's tests, never a dashboard silently.
var (
	acquires        = metric(obs.PromLeaseAcquires)
	acquireDuration = metric(obs.PromLeaseAcquireDuration)
	resolutions     = metric(obs.PromLeaseUnknownResolutions)
	renewals        = metric(obs.PromLeaseRenewals)
	renewalDuration = metric(obs.PromLeaseRenewalDuration)
	losses          = metric(obs.PromLeaseLosses)
	commits         = metric(obs.PromLeaseCommits)
	commitRemaining = metric(obs.PromLeaseCommitRemaining)
	cancellation    = metric(obs.PromLeaseCancellationLatency)
	overrunning     = metric(obs.PromLeaseOverrunning)
	lateCompletions = metric(obs.PromLeaseLateCompletions)
	fenceChecks     = metric(obs.PromFenceChecks)
	fenceRejections = metric(obs.PromFenceRejections)
	fenceRepairs    = metric(obs.PromFenceRepairs)
	active          = metric(obs.PromLeaseActive)
	holdDuration    = metric(obs.PromLeaseHoldDuration)
	releases        = metric(obs.PromLeaseReleases)
	waiting         = metric(obs.PromLeaseWaiting)
	waitDuration    = metric(obs.PromLeaseWaitDuration)
	forceReleases   = metric(obs.PromLeaseForceReleases)
)

// view is how a dashboard splits lease series: the overview sums over the
// selected locks, the lock detail shows one series per lock.
type view struct {
	by []string // labels lease series are split by
}

var (
	overviewView = view{}
	detailView   = view{by: []string{obs.LabelLockName}}
)

// with is v's labels followed by more.
func (v view) with(more ...string) []string {
	return append(append([]string(nil), v.by...), more...)
}

// legend joins v's label templates and the given parts into a legend format.
func (v view) legend(parts ...string) string {
	var all []string
	for _, l := range v.by {
		all = append(all, label(l))
	}
	return strings.Join(append(all, parts...), " ")
}

// name is the legend of a single series: the lock name where series are
// split by lock, else what the series counts.
func (v view) name(what string) string {
	if len(v.by) > 0 {
		return v.legend()
	}
	return what
}

// label is a legend template for a label.
func label(l string) string { return "{{" + l + "}}" }

// Thresholds shared by the overview and the lock detail.
var (
	anyEventRed      = []threshold{{nonZero, "red"}}
	anyEventWarn     = []threshold{{nonZero, "orange"}, {0.1, "red"}} // a lost lease is survivable; one every 10s is not
	unknownRatioStep = []threshold{{0.001, "orange"}, {0.01, "red"}}
	nearExpiryStep   = []threshold{{0.01, "orange"}, {0.05, "red"}}
	cancelP99Step    = []threshold{{0.1, "orange"}, {1, "red"}}
	overrunningStep  = []threshold{{1, "red"}}
)

// unsafeStats is the top line: one number per way a lock can fail to protect
// anything, ids first to first+7.
func unsafeStats(v view, first uint32) []cog.Builder[dashboard.Panel] {
	// Zero, not "No data", where lockwatch reports but nothing went wrong:
	// lease-side series are measured against acquires (every process that
	// takes locks counts them), fence-side ones against fence checks.
	leaseBase := rate(acquires, v.by)
	// The ratios that an alert shows too read the rates the alerts'
	// recording rules record, so that panel and alert compute one number.
	acquireRates := recorded(alerts.RecordAcquireRate, v.by)
	commitRates := recorded(alerts.RecordCommitRate, v.by)
	fenceLegend := "all resources"
	if len(v.by) == 0 {
		fenceLegend = ""
	}
	return []cog.Builder[dashboard.Panel]{
		statPanel(first, "Stale writes rejected",
			"Writes a fenced resource refused because they carried a fencing token older than one it had accepted: a holder that had lost its lease still wrote. The fence stopped them, but each one is a lease that did not protect its work. Fence metrics carry the resource, not the lock name. Any non-zero rate is red; the exemplars of the time series below link to the late writer's trace.",
			units.OpsPerSecond,
			query{orZero(rate(fenceRejections, nil), rate(fenceChecks, nil)), fenceLegend},
			anyEventRed...),
		statPanel(first+1, "Unknown-acquire ratio",
			"Share of acquires whose result is unknown (timeout or transport error): the lock may or may not have been taken, so the work did not run and a conditional release cleans up. A rising ratio means Redis is slow or unreachable. "+
				recordedNote(alerts.RecordAcquireRate, "LockwatchUnknownAcquiresHigh"),
			units.PercentUnit,
			query{ratio(orZero(recorded(alerts.RecordAcquireRate, v.by, eq(obs.AttrResult, string(obs.AcquireUnknown))), acquireRates), acquireRates), v.legend()},
			unknownRatioStep...),
		statPanel(first+2, "Renewal failures",
			"Renewals rejected (someone else holds the key) or unknown (timeout, transport error). Each one loses its lease: the work is cancelled.",
			units.OpsPerSecond,
			query{orZero(rate(renewals, v.by, ne(obs.AttrResult, string(obs.RenewalRenewed))), leaseBase), v.legend()},
			anyEventWarn...),
		statPanel(first+3, "Leases lost",
			"Leases lost for any reason but a graceful shutdown (reason=\"closed\", the Locker closed while holding): renewal rejected or unknown, deadline reached without a confirmed renewal, or the maximum hold time.",
			units.OpsPerSecond,
			query{orZero(rate(losses, v.by, ne(obs.AttrReason, string(obs.LossClosed))), leaseBase), v.legend()},
			anyEventWarn...),
		statPanel(first+4, "Near-expiry commit ratio",
			"Share of Commit calls whose final write succeeded with less validity left than the warning threshold: the commit was allowed, but a pause of that length would have made it a stale write. "+
				recordedNote(alerts.RecordCommitRate, "LockwatchNearExpiryCommitsHigh"),
			units.PercentUnit,
			query{ratio(orZero(recorded(alerts.RecordCommitRate, v.by, eq(obs.AttrResult, string(obs.CommitNearExpiry))), commitRates), commitRates), v.legend()},
			nearExpiryStep...),
		statPanel(first+5, "Cancellation latency p99",
			"99th percentile of the time from a lease's loss (its context cancelled) to the end of the work it protected. Empty while no lease was lost. Seconds here mean handlers ignore their context and keep writing without a lease.",
			units.Seconds,
			query{quantile(0.99, cancellation, v.by...), v.legend()},
			cancelP99Step...),
		statPanel(first+6, "Work overrunning a lost lease",
			"Pieces of work still running now although their lease was lost. Each is a potential stale write until it stops.",
			units.Short,
			query{orZero(gauge(overrunning, v.by), leaseBase), v.legend()},
			overrunningStep...),
		statPanel(first+7, "Late completions",
			"Handlers that finished successfully after their lease was lost: potential stale writes. Only a fence at the resource makes them harmless.",
			units.OpsPerSecond,
			query{orZero(rate(lateCompletions, v.by), leaseBase), v.legend()},
			anyEventRed...),
	}
}

// recordedNote is the part of a panel description that says the panel reads
// a recorded series, and what that costs.
func recordedNote(record, alert string) string {
	return "Computed, like the alert " + alert + ", from the 5-minute rates recorded as " + record +
		" by the recording rules of lockwatch.rules.yaml (package alerts), which the Prometheus behind this data source must load (else No data): " +
		"the window is always 5m, not $__rate_interval, so a zoom finer than 5 minutes smooths spikes out."
}

// percentiles is one query per quantile of histogram m, legend "pNN".
func percentiles(v view, m obs.Metric, qs ...float64) []query {
	out := make([]query, 0, len(qs))
	for _, q := range qs {
		name := fmt.Sprintf("p%g", math.Round(q*1000)/10) // 0.99 is p99, not p98.99999999999999
		out = append(out, query{quantile(q, m, v.by...), v.legend(name)})
	}
	return out
}

func fenceRejectionsSeries(id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Fence rejections (stale writes) by resource",
		"Writes refused by each fenced resource for carrying an old fencing token. Exemplars link a spike to the trace of the holder that wrote late. Not split by lock: fence metrics carry the resource.",
		units.OpsPerSecond, true,
		query{rate(fenceRejections, []string{obs.AttrResource}), label(obs.AttrResource)})
}

func fenceChecksSeries(id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Fence checks by resource and result",
		"Fencing-token checks at each resource, by result: accepted; rejected (a stale token, counted in the fence rejections too); late (a guarded write refused because its request's handler had returned); "+
			"and the tokens refused before any comparison, which move no mark and are no stale write: foreign (minted for another lock key), forged (not signed with a secret the resource has), ahead (unsigned, beyond the resource's clock plus its max skew), unscoped (a bare number), malformed. "+
			"Refusals that go on fire LockwatchFenceTokensRefused; the Warn log \"lockwatch: fencing token refused\" leads to the sender's trace. Not split by lock: fence metrics carry the resource.",
		units.OpsPerSecond, false,
		query{rate(fenceChecks, []string{obs.AttrResource, obs.AttrResult}), label(obs.AttrResource) + " " + label(obs.AttrResult)})
}

func fenceRepairsSeries(id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Fence marks repaired by resource",
		"High-water marks an operator set back to the newest fence minted for their key (lockwatch fence --force, RedisStore.Repair): a token no lease carried had moved the mark ahead of every lease, and the resource refused all of them as stale until then. Any at all means a bad token reached the resource: find where it came from. Not split by lock: fence metrics carry the resource.",
		units.OpsPerSecond, false,
		query{rate(fenceRepairs, []string{obs.AttrResource}), label(obs.AttrResource)})
}

func acquireOutcomesSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Acquire outcomes",
		"Acquire calls by result: acquired, contended (someone else holds the lock), unknown (timeout or transport error: the work did not run) or error.",
		units.OpsPerSecond, false,
		query{rate(acquires, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))})
}

func acquireLatencySeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Acquire latency",
		"Time of Acquire calls, waits for a contended lock included. Exemplars link to lease.acquire spans.",
		units.Seconds, true, percentiles(v, acquireDuration, 0.5, 0.99)...)
}

func unknownResolutionsSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Unknown-acquire clean-up",
		"How the clean-up after an unknown acquire ended: released (the acquire had in fact taken the lock) or absent (it had not), both barring the acquire from taking the key later; or unresolved (the key may stay held until its TTL runs out).",
		units.OpsPerSecond, false,
		query{rate(resolutions, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))})
}

func renewalResultsSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Renewal results",
		"Renewals by result: renewed, rejected (someone else holds the key) or unknown (timeout or transport error). Anything but renewed loses the lease.",
		units.OpsPerSecond, false,
		query{rate(renewals, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))})
}

func renewalLatencySeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Renewal latency",
		"Round trip of the renewal pipeline each renewal went in. Approaching a third of the TTL, renewals start to miss their deadline.",
		units.Seconds, true, percentiles(v, renewalDuration, 0.5, 0.99)...)
}

func lossesSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Leases lost by reason",
		"renewal_rejected, force_released (an administrator took the key), renewal_unknown, deadline (no confirmed renewal before the cancel point), max_hold, and closed (the Locker was closed while holding: a graceful shutdown, not a failure).",
		units.OpsPerSecond, false,
		query{rate(losses, v.with(obs.AttrReason)), v.legend(label(obs.AttrReason))})
}

func cancellationSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Cancellation latency",
		"Time from a lease's loss to the end of the work it protected. Microseconds for handlers that honour their context; anything longer is work running without a lease. Exemplars link to the request's trace.",
		units.Seconds, true, percentiles(v, cancellation, 0.5, 0.99)...)
}

func overrunningSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Work overrunning a lost lease",
		"Pieces of work still running after their lease was lost.",
		units.Short, false,
		query{gauge(overrunning, v.by), v.name("overrunning")})
}

func lateCompletionsSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Late completions",
		"Handlers that finished successfully after their lease was lost: potential stale writes.",
		units.OpsPerSecond, false,
		query{rate(lateCompletions, v.by), v.name("late completions")})
}

func activeSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Active leases",
		"Leases held and active (acquired, not yet released or lost).",
		units.Short, false,
		query{gauge(active, v.by), v.name("active")})
}

func holdTimeSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Hold time",
		"Time from acquire to release. Exemplars link to the request's trace.",
		units.Seconds, true, percentiles(v, holdDuration, 0.5, 0.99)...)
}

func commitRemainingSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Validity remaining at commit (low is bad)",
		"Validity the lease had left when Commit decided, median and 10th percentile: the margin a pause would have had to eat to turn the commit into a stale write. Exemplars link to the request's trace.",
		units.Seconds, true, percentiles(v, commitRemaining, 0.5, 0.1)...)
}

func commitOutcomesSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Commit outcomes",
		"Commit calls by what became of the final write: committed, near_expiry (written below the warning threshold), refused (not run: lease lost or below the hard margin), stale (rejected by a fence: a late write stopped), failed (any other error: the write may or may not have taken effect).",
		units.OpsPerSecond, false,
		query{rate(commits, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))})
}

func releasesSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Releases by result",
		"Releases by result: released, not_held (the key had expired or changed hands before the release: the lease outlived its validity) or unknown.",
		units.OpsPerSecond, false,
		query{rate(releases, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))})
}

func forceReleasesSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Keys released by force",
		"Keys an administrator took back from their holder (lockwatch release --force, Locker.ForceRelease), by result: released (the holder loses its lease at its next renewal, reason force_released), not_held (the key was free, or held by another holder than the one named: nothing changed) or unknown. The lock name is the one of the Locker that forced the release. Any at all means someone judged a holder stuck: check the holder's renewal failures and losses.",
		units.OpsPerSecond, false,
		query{rate(forceReleases, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))})
}

func waitingSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Callers waiting",
		"Callers inside Acquire waiting for a contended lock (lease.Config.Wait), from the first contended answer until Acquire returns. A level that stays up means callers arrive about as fast as the holders release: they queue.",
		units.Short, false,
		query{gauge(waiting, v.by), v.name("waiting")})
}

func waitResultsSeries(v view, id uint32) *timeseries.PanelBuilder {
	return seriesPanel(id, "Waits by result",
		"How waits for a contended lock ended: acquired, timed_out (the Config.Wait bound passed and the caller got ErrNotAcquired), cancelled (the caller's context ended first), unknown or error. Acquires that did not back off are not waits. Mostly timed_out: the lock is held longer than its callers will wait.",
		units.OpsPerSecond, false,
		query{observations(waitDuration, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))})
}

func waitTimeSeries(v view, id uint32) *timeseries.PanelBuilder {
	byResult := view{by: v.with(obs.AttrResult)}
	return seriesPanel(id, "Wait time by result",
		"Time from the first contended answer to the end of the wait, by result. Timed-out waits sit at the Config.Wait bound; acquired ones say how long a caller queues behind the holders. Exemplars link to lease.acquire spans.",
		units.Seconds, true, percentiles(byResult, waitDuration, 0.5, 0.99)...)
}

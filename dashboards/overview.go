package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// overview answers "is anything unsafe right now?": the stats on top turn
// orange or red when a lock failed to protect its work, the time series below
// say where and since when. Lease series are summed over the selected locks;
// the elections' row shows who leads each election and every transition,
// the permits' row each semaphore's held permits against its limit.
func overview() *dashboard.DashboardBuilder {
	v := overviewView
	d := newDashboard(OverviewUID, "lockwatch / Overview",
		"Is anything unsafe right now? Stale writes stopped by fences, unknown acquires, failed renewals, lost leases, near-expiry commits, work outliving its lease; who leads each election, and each semaphore's permits held against its limit. Drill down per lock in lockwatch / Lock detail.")
	section(d, row(100, "Is anything unsafe right now?"), unsafeStats(v, 101)...)
	section(d, row(200, "Stale writes and lost leases"),
		fenceRejectionsSeries(201),
		lossesSeries(v, 202),
		renewalResultsSeries(v, 203),
		cancellationSeries(v, 204),
	)
	section(d, row(300, "Acquire"),
		acquireOutcomesSeries(v, 301),
		acquireLatencySeries(v, 302),
		waitingSeries(v, 303),
		waitResultsSeries(v, 304),
	)
	section(d, row(400, "Holding and committing"),
		activeSeries(v, 401),
		holdTimeSeries(v, 402),
		commitRemainingSeries(v, 403),
		commitOutcomesSeries(v, 404),
	)
	section(d, row(500, "Elections: who leads, and every transition"), electionPanels(501)...)
	section(d, row(600, "Permits: held against the limit, and waits"), permitsPanels(601)...)
	return d
}

package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// lockDetail is the drill-down: the same signals, one series per selected
// lock, plus the waits for contended locks, renewal latency, releases (by
// their holders and by force), the clean-up of unknown acquires and the
// fenced resources.
func lockDetail() *dashboard.DashboardBuilder {
	v := detailView
	d := newDashboard(LockDetailUID, "lockwatch / Lock detail",
		"The lockwatch signals of the selected locks, one series per lock: acquire, wait, renewal, loss, commit and release. Fence metrics carry the resource, not the lock, and are shown for all resources at the bottom.")
	section(d, row(100, "Is anything unsafe for $"+varLockName+"?"), unsafeStats(v, 101)...)
	section(d, row(200, "Acquire and hold"),
		acquireOutcomesSeries(v, 201),
		acquireLatencySeries(v, 202),
		unknownResolutionsSeries(v, 203),
		activeSeries(v, 204),
	)
	section(d, row(600, "Waiting for $"+varLockName),
		waitingSeries(v, 601),
		waitResultsSeries(v, 602),
		waitTimeSeries(v, 603),
	)
	section(d, row(300, "Renewal and loss"),
		renewalResultsSeries(v, 301),
		renewalLatencySeries(v, 302),
		lossesSeries(v, 303),
		cancellationSeries(v, 304),
		overrunningSeries(v, 305),
		lateCompletionsSeries(v, 306),
	)
	section(d, row(400, "Commit and release"),
		commitRemainingSeries(v, 401),
		commitOutcomesSeries(v, 402),
		holdTimeSeries(v, 403),
		releasesSeries(v, 404),
		forceReleasesSeries(v, 405),
	)
	section(d, row(500, "Fenced resources (all locks)"),
		fenceRejectionsSeries(501),
		fenceChecksSeries(502),
		fenceRepairsSeries(503),
	)
	return d
}

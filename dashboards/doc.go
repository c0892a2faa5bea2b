// Package dashboards generates lockwatch's Grafana dashboards with the
// Grafana Foundation SDK and holds the generated JSON, which is committed:
//
//   - overview.json, "lockwatch / Overview" (UID lockwatch-overview): is
//     anything unsafe right now? A line of stats with thresholds (stale
//     writes rejected by fences, unknown-acquire ratio, renewal failures,
//     leases lost other than by a graceful shutdown, near-expiry commit
//     ratio, cancellation latency p99, work overrunning a lost lease, late
//     completions), then time series of every signal summed over the
//     selected locks.
//   - lock-detail.json, "lockwatch / Lock detail" (UID
//     lockwatch-lock-detail): the same signals with one series per selected
//     lock, plus the time callers wait for contended locks, renewal
//     latency, releases, the clean-up of unknown acquires and the fenced
//     resources.
//
// The generator is the source of truth; never edit the JSON. After changing
// it, run
//
//	go generate ./dashboards/...
//
// A test fails when the committed files differ from Generate's output, when
// a file does not decode strictly into the SDK's dashboard types, when
// promtool cannot parse a query, or when a query names a series that is
// neither in telemetry.Metrics nor recorded by alerts' lockwatch.rules.yaml.
// The rules of grafana/dashboard-linter (datasource, job and instance
// variables, job and instance matchers in every selector, $__rate_interval,
// counters only in rate or increase, units, titles and descriptions,
// read-only dashboards) are tests too, one per rule, in lint_test.go.
//
// # Queries
//
// Metric names and labels come from package telemetry, so a renamed series
// breaks the generator's tests instead of a panel. Label values of closed
// sets (result, reason) come from internal/obs.
//
// Every query selects {job=~"$job", instance=~"$instance"}, and
// lock_name=~"$lock_name" on series that carry a lock name (fence series carry
// the resource instead), and every rate uses $__rate_interval (recorded
// series, below, have a fixed window). Three guards
// keep the panels honest:
//
//   - The stats add "or 0 * <baseline>", the baseline being acquires (lease
//     side) or fence checks (resource side): zero where lockwatch reports,
//     "No data" where nothing does, also for selections (reason!="closed")
//     that match no series. (telemetry creates each lock name's and
//     resource's counter series at zero on first use, so rates see first
//     events.)
//   - Ratios divide by clamp_min(whole, 1e-9): an idle window reads 0, never
//     NaN.
//   - Quantiles end in ">= 0", which drops the NaN histogram_quantile returns
//     for a window without observations.
//
// # Recorded series
//
// The unknown-acquire and near-expiry commit ratio stats are what the alerts
// LockwatchUnknownAcquiresHigh and LockwatchNearExpiryCommitsHigh measure,
// so they read the same recorded rates the alerts' ratios are built from
// (package alerts, lockwatch.rules.yaml, group lockwatch-recording):
// job_instance_lock_name_result:lockwatch_lease_acquires:rate5m and
// job_instance_lock_name_result:lockwatch_lease_commits:rate5m, recorded by
// job, instance, lock_name and result so that the variables filter them and
// the overview sums them, as they would the counters. The Prometheus behind
// the data source must load those rules, or these two stats read "No data".
// A recorded rate has the rule's fixed 5m window instead of
// $__rate_interval; the panels say so in their descriptions (a test checks
// it), and the rate-interval rule keeps applying to every rate() a query
// writes. The name tests accept a recorded series only if the rule file
// records it.
//
// Latency panels (and stale-write rejections) ask for exemplars, which link
// a point to the trace of the request it measured.
//
// # Import
//
// The dashboards use a datasource variable (type prometheus, first of the
// variables) for every panel and query, and no datasource UID, so they import
// through Grafana's import screen (Dashboards > New > Import) as they are.
// The SDK's dashboard model has no __inputs or __requires section, and its
// strict decoder rejects one, so the import screen does not prompt for a
// datasource: Grafana picks its default Prometheus datasource, and the "Data
// source" menu at the top of the dashboard switches to another. Variables
// job, instance and lock_name follow, multi-value and "All" by default. The
// dashboards are read-only (editable false): change the generator, not the
// imported copy.
package dashboards

//go:generate go run ./internal/gen

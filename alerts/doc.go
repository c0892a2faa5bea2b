// Package alerts generates lockwatch's alerting rules from one catalogue:
// Prometheus rule groups (lockwatch.rules.yaml), their promtool unit tests
// (lockwatch.rules_test.yaml), the same alerts as Grafana-managed rules
// (grafana-alert-rules.json) and an example Alertmanager configuration that
// routes them (alertmanager.example.yml). The files are committed; a test
// fails when they differ from a fresh Generate, so edit the generator and
// run go generate ./alerts/..., never the files.
//
// The alerts follow the monitoring-mixin conventions: one group per concern
// (fencing, acquire, renewal, commit, cancellation, election, permits,
// telemetry),
// CamelCase names starting with Lockwatch, a for duration, a severity label
// (critical pages, warning opens a ticket), a static summary, a description
// templated with $value and the series' labels, and a runbook_url pointing
// at the alert's section of RUNBOOK.md, which explains every threshold.
//
// The only page is LockwatchStaleWriteSpike: writes carrying a stale
// fencing token arriving at a resource at a steady rate, meaning two
// holders believed they held the same lock. A single stale write opens a
// ticket (LockwatchStaleWrite), and so does a job whose lockwatch series
// vanished (LockwatchMetricsAbsent). Lease losses with reason closed are
// Locker.Close giving up its leases at shutdown and never alert.
//
// # Recording rules
//
// Two ratios are both a dashboard stat and an alert: the unknown-acquire
// ratio (stat "Unknown-acquire ratio", LockwatchUnknownAcquiresHigh) and
// the near-expiry commit ratio (stat "Near-expiry commit ratio",
// LockwatchNearExpiryCommitsHigh). Renewal failures and wait saturation are
// not: the dashboards show those as rates by result, the alerts as ratios,
// so there is nothing shared to record. For the shared two, the first group
// of lockwatch.rules.yaml, lockwatch-recording, records (recording.go) in
// the monitoring-mixin's level:metric:operations naming:
//
//   - the counter's 5-minute rate by job, instance, lock_name and result,
//     job_instance_lock_name_result:lockwatch_lease_acquires:rate5m and
//     job_instance_lock_name_result:lockwatch_lease_commits:rate5m: numerator
//     (result="unknown", result="near_expiry") and denominator (every
//     result) in one series set;
//   - from those, the alert-level ratio by job and lock_name,
//     job_lock_name:lockwatch_lease_acquires_unknown:ratio_rate5m and
//     job_lock_name:lockwatch_lease_commits_near_expiry:ratio_rate5m, absent
//     where the denominator is zero.
//
// The rates, not a ratio, are what the dashboards read: they filter by job,
// instance and lock_name and the overview sums over the selected locks, and
// a ratio cannot be re-aggregated (an average of per-lock ratios is not the
// ratio of the sums), while rates can. Recording at the level the
// dashboards filter on keeps every variable working and sums them into any
// ratio. The alerts read the ratio, so alert and panel compute the same
// number from the same recorded rates. One group keeps the rules in order,
// so a ratio reads the rates of the same evaluation. Config.JobSelector
// narrows the recording rules' selectors, and those of the alerts reading
// them.
//
// The Grafana-managed rules keep the raw expressions on the counters: the
// Prometheus their data source points at need not load lockwatch.rules.yaml
// (loading it is what the recording rules require, and it would run the
// alerts twice), and a rule reading a series nobody records is silently
// never firing. The recorded and the raw forms agree: summing the recorded
// per-instance, per-result rates by job and lock_name is summing the
// counters' rates (a test checks the Grafana query is the recorded ratio
// with the rates inlined). Every recording rule has a promtool
// promql_expr_test in lockwatch.rules_test.yaml, and the alert tests
// evaluate through the recording rules, as promtool evaluates every rule of
// the file.
//
// Expressions name metrics only through the telemetry constants (a rename
// cannot silently break an alert) and label values through lease's closed
// sets. Config.JobSelector narrows every selector of every expression to
// the jobs to watch; every firing case and every healthy case of every
// alert runs under promtool test rules.
package alerts

//go:generate go run ./gen

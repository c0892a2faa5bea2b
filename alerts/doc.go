// Package alerts generates lockwatch's alerting rules from one catalogue:
// Prometheus rule groups (lockwatch.rules.yaml), their promtool unit tests
// (lockwatch.rules_test.yaml), the same alerts as Grafana-managed rules
// (grafana-alert-rules.json) and an example Alertmanager configuration that
// routes them (alertmanager.example.yml). The files are committed; a test
// fails when they differ from a fresh Generate, so edit the generator and
// run go generate ./alerts/..., never the files.
//
// The alerts follow the monitoring-mixin conventions: one group per concern
// (fencing, acquire, renewal, commit, cancellation), CamelCase names
// starting with Lockwatch, a for duration, a severity label (critical pages,
// warning opens a ticket), a static summary, a description templated with
// $value and the series' labels, and a runbook_url pointing at the alert's
// section of RUNBOOK.md, which explains every threshold.
//
// The only page is LockwatchStaleWriteSpike: writes carrying a stale
// fencing token arriving at a resource at a steady rate, meaning two holders
// believed they held the same lock. Lease losses with reason closed are
// Locker.Close giving up its leases at shutdown and never alert.
//
// Expressions name metrics only through the telemetry constants (a rename
// cannot silently break an alert) and label values through lease's closed
// sets. Config.JobSelector narrows every selector of every expression to the
// jobs to watch; every firing case and every healthy case of every alert
// runs under promtool test rules.
package alerts

//go:generate go run ./gen

package dashboards_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// seriesRE finds lockwatch series names: identifiers starting with
// lockwatch_, and the matchers in braces after them if any.
var seriesRE = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:])(lockwatch_[a-zA-Z0-9_:]*)(\{[^}]*\})?`)

// telemetryMetric returns the telemetry metric a series name belongs to: a
// Prometheus name of obs.Metrics, or the _bucket, _sum or _count series
// of one of its histograms.
func telemetryMetric(series string) (obs.Metric, bool) {
	for _, m := range obs.Metrics {
		if series == m.Prom {
			return m, true
		}
		if m.Kind != obs.Histogram {
			continue
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if series == m.Prom+suffix {
				return m, true
			}
		}
	}
	return obs.Metric{}, false
}

// Every series a query names is one of telemetry's: a renamed or mistyped
// metric fails here, not as an empty panel in production.
func TestQueriesUseTelemetryNames(t *testing.T) {
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			found := seriesRE.FindAllStringSubmatch(q.expr, -1)
			assert.NotEmpty(t, found, "%s reads no lockwatch series: %s", q.where, q.expr)
			for _, m := range found {
				_, ok := telemetryMetric(m[1])
				assert.True(t, ok, "%s: %s is not a series of obs.Metrics: %s", q.where, m[1], q.expr)
			}
		}
	}
}

// Every metric lockwatch records is on a dashboard.
func TestEveryMetricIsShown(t *testing.T) {
	shown := map[string]bool{}
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			if q.variable {
				continue
			}
			for _, m := range seriesRE.FindAllStringSubmatch(q.expr, -1) {
				if metric, ok := telemetryMetric(m[1]); ok {
					shown[metric.Prom] = true
				}
			}
		}
	}
	for _, m := range obs.Metrics {
		assert.True(t, shown[m.Prom], "no panel reads %s", m.Prom)
	}
}

// Every panel query filters by the dashboard's lock names exactly where the
// series has a lock_name label: fence series have resource instead, and
// filtering them by lock would empty them. (The job and instance matchers
// and $__rate_interval are grafana/dashboard-linter's rules: lint_test.go.)
func TestQueriesFollowTheVariables(t *testing.T) {
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			if q.variable {
				continue
			}
			for _, m := range seriesRE.FindAllStringSubmatch(q.expr, -1) {
				metric, ok := telemetryMetric(m[1])
				if !ok {
					continue // TestQueriesUseTelemetryNames reports it
				}
				matchers := strings.TrimSuffix(strings.TrimPrefix(m[2], "{"), "}")
				lockMatcher := obs.LabelLockName + `=~"$lock_name"`
				if slices.Contains(metric.Labels, obs.LabelLockName) {
					assert.Contains(t, matchers, lockMatcher, "%s: %s", q.where, q.expr)
				} else {
					assert.NotContains(t, matchers, obs.LabelLockName, "%s: %s has no lock_name label: %s", q.where, m[1], q.expr)
				}
			}
		}
	}
}

package dashboards_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// seriesRE finds lockwatch series names: identifiers starting with
// lockwatch_, or recorded series level:lockwatch_…:operations, and the
// matchers in braces after them if any.
var seriesRE = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:])((?:[a-zA-Z_][a-zA-Z0-9_]*:)?lockwatch_[a-zA-Z0-9_:]*)(\{[^}]*\})?`)

// alertRulesFile is the rule file of package alerts, whose recording rules the
// dashboards may read.
const alertRulesFile = "../alerts/lockwatch.rules.yaml"

// recordedLabels maps every series a recording rule of alertRulesFile records to
// the labels its aggregation keeps (sum by (…)).
func recordedLabels(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(alertRulesFile)
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f))
	by := regexp.MustCompile(`^sum by \(([^)]*)\)`)
	out := map[string][]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			m := by.FindStringSubmatch(r.Expr)
			require.NotNil(t, m, "%s: recording rule %s is not sum by (…): %s", alertRulesFile, r.Record, r.Expr)
			out[r.Record] = strings.Split(m[1], ", ")
		}
	}
	require.NotEmpty(t, out, "%s has no recording rules", alertRulesFile)
	return out
}

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

// Every series a query names is one of telemetry's, or one that a recording
// rule of package alerts records: a renamed or mistyped metric, or a
// recorded series the rules do not define, fails here, not as an empty panel
// in production. Variables list label values of raw series only: they must
// work where the recording rules are not loaded.
func TestQueriesUseTelemetryNames(t *testing.T) {
	recorded := recordedLabels(t)
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			found := seriesRE.FindAllStringSubmatch(q.expr, -1)
			assert.NotEmpty(t, found, "%s reads no lockwatch series: %s", q.where, q.expr)
			for _, m := range found {
				_, ok := telemetryMetric(m[1])
				if _, rec := recorded[m[1]]; rec && !q.variable {
					ok = true
				}
				assert.True(t, ok, "%s: %s is neither a series of obs.Metrics nor recorded by %s: %s", q.where, m[1], alertRulesFile, q.expr)
			}
		}
	}
}

// The name check above tells recorded series the rules define from those
// they do not.
func TestRecordedSeriesNames(t *testing.T) {
	recorded := recordedLabels(t)
	var names []string
	for _, m := range seriesRE.FindAllStringSubmatch(`sum(job_instance_lock_name_result:lockwatch_lease_acquires:rate5m{job=~"$job"}) / sum(job:lockwatch_lease_acquires:rate1m)`, -1) {
		names = append(names, m[1])
		_, ok := recorded[m[1]]
		assert.Equal(t, strings.HasPrefix(m[1], "job_instance_lock_name_result:"), ok, m[1])
	}
	assert.Equal(t, []string{"job_instance_lock_name_result:lockwatch_lease_acquires:rate5m", "job:lockwatch_lease_acquires:rate1m"},
		names, "the series pattern reads recorded names")
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
// filtering them by lock would empty them. Recorded series have the labels
// their recording rule keeps. (The job and instance matchers
// and $__rate_interval are grafana/dashboard-linter's rules: lint_test.go.)
func TestQueriesFollowTheVariables(t *testing.T) {
	recorded := recordedLabels(t)
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			if q.variable {
				continue
			}
			for _, m := range seriesRE.FindAllStringSubmatch(q.expr, -1) {
				labels, ok := recorded[m[1]]
				if metric, isMetric := telemetryMetric(m[1]); isMetric {
					labels, ok = metric.Labels, true
				}
				if !ok {
					continue // TestQueriesUseTelemetryNames reports it
				}
				matchers := strings.TrimSuffix(strings.TrimPrefix(m[2], "{"), "}")
				lockMatcher := obs.LabelLockName + `=~"$lock_name"`
				if slices.Contains(labels, obs.LabelLockName) {
					assert.Contains(t, matchers, lockMatcher, "%s: %s", q.where, q.expr)
				} else {
					assert.NotContains(t, matchers, obs.LabelLockName, "%s: %s has no lock_name label: %s", q.where, m[1], q.expr)
				}
			}
		}
	}
}

// A panel that reads recorded series says so in its description, with the
// series' name and the window it loses: the recorded rates are over a fixed
// 5m, so $__rate_interval (TestLintTargetRateInterval, which checks the
// windows a query writes) does not apply to them. At least the two ratios
// an alert shows too read them.
func TestRecordedSeriesAreDescribed(t *testing.T) {
	recorded := recordedLabels(t)
	readers := 0
	for _, c := range loadCommitted(t) {
		ps, _ := panels(c.dash)
		for _, p := range ps {
			for _, target := range p.Targets {
				q, ok := target.(*prometheus.Dataquery)
				require.True(t, ok)
				for _, m := range seriesRE.FindAllStringSubmatch(q.Expr, -1) {
					if _, ok := recorded[m[1]]; !ok {
						continue
					}
					readers++
					assert.Contains(t, deref(p.Description), m[1], "%s panel %d: name the recorded series", c.file, id(p))
					assert.Contains(t, deref(p.Description), "not $__rate_interval", "%s panel %d: say the window is fixed", c.file, id(p))
				}
			}
		}
	}
	assert.GreaterOrEqual(t, readers, 4, "the unknown-acquire and near-expiry ratios of both dashboards read recorded series")
}

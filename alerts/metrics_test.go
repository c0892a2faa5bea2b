package alerts_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/stretchr/testify/assert"

	"github.com/lockwatch/lockwatch/alerts"
)

var (
	quotedRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{`)
	// lockwatchRE: a lockwatch_ name not inside a longer name (a recorded
	// series, level:lockwatch_…:operations, is one name).
	lockwatchRE = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:])(lockwatch_[a-zA-Z0-9_:]*)`)
)

// metricsOf lists the metric names an expression reads: every name before
// a selector's brace, and every lockwatch_ name anywhere outside strings.
func metricsOf(expr string) []string {
	bare := quotedRE.ReplaceAllString(expr, `""`)
	var names []string
	for _, m := range selectorRE.FindAllStringSubmatch(bare, -1) {
		names = append(names, m[1])
	}
	for _, m := range lockwatchRE.FindAllStringSubmatch(bare, -1) {
		names = append(names, m[1])
	}
	return names
}

// TestExpressionsUseTelemetryNames: every metric any expression reads, in
// the Prometheus rules (recording rules included) and in the Grafana rules,
// is one of telemetry's Prometheus names (a histogram's _bucket, _sum or
// _count only for a histogram) or, in the Prometheus rules only, a series a
// recording rule of the file records.
func TestExpressionsUseTelemetryNames(t *testing.T) {
	kinds := map[string]obs.Kind{}
	for _, m := range obs.Metrics {
		kinds[m.Prom] = m.Kind
	}
	recorded := map[string]bool{}
	for _, r := range decodeRecordings(t, read(t, alerts.RulesFile)) {
		recorded[r.Record] = true
	}
	telemetry := func(name string) bool {
		if _, ok := kinds[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && kinds[base] == obs.Histogram {
				return true
			}
		}
		return false
	}

	prometheus := func(name string) bool { return telemetry(name) || recorded[name] }

	type source struct {
		expr  string
		known func(string) bool
	}
	exprs := map[string]source{}
	for _, r := range decodeAllRules(t, read(t, alerts.RulesFile)) {
		exprs["prometheus "+r.Alert+r.Record] = source{r.Expr, prometheus}
	}
	for title, expr := range grafanaQueries(t, read(t, alerts.GrafanaFile)) {
		// The Grafana-managed rules' Prometheus need not load the
		// recording rules: raw telemetry series only.
		exprs["grafana "+title] = source{expr, telemetry}
	}
	for name, e := range exprs {
		metrics := metricsOf(e.expr)
		assert.NotEmpty(t, metrics, "%s reads no metric: %s", name, e.expr)
		for _, m := range metrics {
			assert.True(t, e.known(m), "%s reads %s, which is neither a telemetry Prom* name nor recorded", name, m)
		}
	}

	// A recorded name the file does not define is unknown, as is a telemetry
	// name with a recording's colons around it.
	for _, bad := range []string{"job_lock_name:lockwatch_lease_acquires_unknown:ratio_rate1m", "lockwatch_lease_acquires:rate5m"} {
		assert.False(t, prometheus(bad), bad)
	}
}

// TestMetricsOf: the extraction finds what the check above relies on.
func TestMetricsOf(t *testing.T) {
	assert.Equal(t,
		[]string{"lockwatch_a_bucket", "up", "lockwatch_a_bucket", "lockwatch_b"},
		metricsOf(`histogram_quantile(0.99, sum by (le) (rate(lockwatch_a_bucket{job="x{y}"}[5m]))) + on() up{} + lockwatch_b`))
	assert.Equal(t,
		[]string{"job:lockwatch_a:rate5m", "lockwatch_b"},
		metricsOf(`job:lockwatch_a:rate5m{job="x"} / lockwatch_b`))
}

package alerts_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockwatch/lockwatch/alerts"
	"github.com/lockwatch/lockwatch/internal/obs"
)

var (
	quotedRE    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	selectorRE  = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{`)
	lockwatchRE = regexp.MustCompile(`\blockwatch_[a-zA-Z0-9_:]*`)
)

// metricsOf lists the metric names an expression reads: every name before
// a selector's brace, and every lockwatch_ name anywhere outside strings.
func metricsOf(expr string) []string {
	bare := quotedRE.ReplaceAllString(expr, `""`)
	var names []string
	for _, m := range selectorRE.FindAllStringSubmatch(bare, -1) {
		names = append(names, m[1])
	}
	return append(names, lockwatchRE.FindAllString(bare, -1)...)
}

// TestExpressionsUseTelemetryNames: every metric any expression reads, in
// the Prometheus and in the Grafana rules, is one of telemetry's Prometheus
// names (a histogram's _bucket, _sum or _count only for a histogram).
func TestExpressionsUseTelemetryNames(t *testing.T) {
	kinds := map[string]obs.Kind{}
	for _, m := range obs.Metrics {
		kinds[m.Prom] = m.Kind
	}
	known := func(name string) bool {
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

	exprs := map[string]string{}
	for _, r := range decodeRules(t, read(t, alerts.RulesFile)) {
		exprs["prometheus "+r.Alert] = r.Expr
	}
	for title, expr := range grafanaQueries(t, read(t, alerts.GrafanaFile)) {
		exprs["grafana "+title] = expr
	}
	for name, expr := range exprs {
		metrics := metricsOf(expr)
		assert.NotEmpty(t, metrics, "%s reads no metric: %s", name, expr)
		for _, m := range metrics {
			assert.True(t, known(m), "%s reads %s, which is not a telemetry Prom* name", name, m)
		}
	}
}

// TestMetricsOf: the extraction finds what the check above relies on.
func TestMetricsOf(t *testing.T) {
	assert.Equal(t,
		[]string{"lockwatch_a_bucket", "up", "lockwatch_a_bucket", "lockwatch_b"},
		metricsOf(`histogram_quantile(0.99, sum by (le) (rate(lockwatch_a_bucket{job="x{y}"}[5m]))) + on() up{} + lockwatch_b`))
}

package dashboards

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// Grafana variables every query is written against. The datasource variable
// is the one datasource reference of every panel and query: no datasource
// UID is hard-coded, so the JSON imports into any Grafana.
const (
	varDatasource = "datasource"
	varJob        = "job"
	varInstance   = "instance"
	varLockName   = obs.LabelLockName

	// rateWindow is the window of every rate: Grafana's $__rate_interval is
	// at least four scrape intervals, so a rate never sees fewer than two
	// samples, whatever the zoom.
	rateWindow = "$__rate_interval"

	// nonZero is the smallest denominator a ratio divides by: a window
	// without a single acquire or commit reads 0 instead of NaN, and a
	// threshold at nonZero turns a panel red on any event at all.
	nonZero = 1e-9
)

// promMetrics indexes obs.Metrics by Prometheus name.
var promMetrics = func() map[string]obs.Metric {
	m := make(map[string]obs.Metric, len(obs.Metrics))
	for _, x := range obs.Metrics {
		m[x.Prom] = x
	}
	return m
}()

// metric returns the telemetry table entry of a Prometheus series name. A
// name missing from the table is a bug of this generator, and the tests run
// every line of it.
func metric(prom string) obs.Metric {
	m, ok := promMetrics[prom]
	if !ok {
		panic("dashboards: no telemetry metric " + prom)
	}
	return m
}

// eq is an equality matcher, ne its negation.
func eq(label, value string) string { return label + "=" + strconv.Quote(value) }
func ne(label, value string) string { return label + "!=" + strconv.Quote(value) }

// selector is m's series (name plus suffix, e.g. _bucket) with the matchers
// every query carries — the dashboard's job and instance, and the selected
// lock names when m has a lock_name label (fence metrics have resource
// instead) — and extra ones.
func selector(m obs.Metric, suffix string, extra ...string) string {
	ms := []string{
		`job=~"$` + varJob + `"`,
		`instance=~"$` + varInstance + `"`,
	}
	if slices.Contains(m.Labels, obs.LabelLockName) {
		ms = append(ms, obs.LabelLockName+`=~"$`+varLockName+`"`)
	}
	ms = append(ms, extra...)
	return m.Prom + suffix + "{" + strings.Join(ms, ", ") + "}"
}

// sumBy wraps expr in sum, by the given labels when there are any.
func sumBy(by []string, expr string) string {
	if len(by) == 0 {
		return "sum(" + expr + ")"
	}
	return "sum by (" + strings.Join(by, ", ") + ") (" + expr + ")"
}

// rate is the per-second rate of counter m over the rate window, summed by
// the given labels.
func rate(m obs.Metric, by []string, extra ...string) string {
	return sumBy(by, "rate("+selector(m, "", extra...)+"["+rateWindow+"])")
}

// recorded is a series that a recording rule of package alerts records
// (lockwatch.rules.yaml: the Prometheus the dashboard reads must load it),
// with the matchers every query carries, summed by the given labels. The
// recorded rates keep job, instance and lock_name, so the variables filter
// them as they filter the counters; their window is the recording's fixed
// 5m, not $__rate_interval.
func recorded(name string, by []string, extra ...string) string {
	return sumBy(by, selector(obs.Metric{Prom: name, Labels: []string{obs.LabelLockName}}, "", extra...))
}

// observations is the per-second rate of histogram m's observations (its
// _count series) over the rate window, summed by the given labels.
func observations(m obs.Metric, by []string, extra ...string) string {
	return sumBy(by, "rate("+selector(m, "_count", extra...)+"["+rateWindow+"])")
}

// gauge is gauge m summed by the given labels.
func gauge(m obs.Metric, by []string, extra ...string) string {
	return sumBy(by, selector(m, "", extra...))
}

// quantile is the q-quantile of histogram m by the given labels. A window
// without observations gives histogram_quantile a NaN; ">= 0" drops it (every
// lockwatch histogram measures non-negative seconds), so an idle lock shows
// a gap instead of NaN.
func quantile(q float64, m obs.Metric, by ...string) string {
	buckets := sumBy(append([]string{"le"}, by...), "rate("+selector(m, "_bucket")+"["+rateWindow+"])")
	return fmt.Sprintf("histogram_quantile(%s, %s) >= 0", strconv.FormatFloat(q, 'f', -1, 64), buckets)
}

// orZero is expr, or 0 for every group where baseline has data: a selection
// that matches no series shows as 0 where lockwatch reports, while one with
// no lockwatch data anywhere still reads "No data" rather than a false 0.
func orZero(expr, baseline string) string {
	return "(" + expr + " or 0 * " + baseline + ")"
}

// ratio divides part by whole, never by zero: an idle window reads 0, not
// NaN.
func ratio(part, whole string) string {
	return part + " / clamp_min(" + whole + ", " + strconv.FormatFloat(nonZero, 'g', -1, 64) + ")"
}

// labelValues is a Grafana variable query: the values of label on the
// series selector sel.
func labelValues(sel, label string) string {
	return "label_values(" + sel + ", " + label + ")"
}

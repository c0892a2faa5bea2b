package alerts

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// Labels that the alerts aggregate by or match on. Target labels come from
// Prometheus's scrape, the others from telemetry.
const (
	labelJob      = "job"
	labelInstance = "instance"
	labelLe       = "le" // histogram bucket bound
	labelSeverity = "severity"
	labelLock     = obs.LabelLockName
	labelResult   = obs.AttrResult
	labelReason   = obs.AttrReason
	labelResource = obs.AttrResource
)

// reservedLabels are labels the test cases or the rules set themselves.
var reservedLabels = map[string]bool{
	"__name__": true, "alertname": true, labelSeverity: true, labelLe: true,
	labelLock: true, labelResult: true, labelReason: true, labelResource: true,
	labelElection: true, labelCandidate: true, labelSemaphore: true,
}

// window is the range of every rate and increase: five scrapes at the
// common 1m interval and twenty at 15s, enough to ride out one missed
// scrape, short enough that a page comes within minutes.
const window = 5 * time.Minute

// promql writes expressions in which every series selector carries the job
// selector, so that changing it narrows every alert at once.
type promql struct{ jobSelector string }

// sel is a series selector: the metric, the job selector and matchers.
func (q promql) sel(metric string, matchers ...string) string {
	return metric + "{" + strings.Join(append([]string{q.jobSelector}, matchers...), ", ") + "}"
}

// rate is the per-second rate of a counter over the window.
func (q promql) rate(metric string, matchers ...string) string {
	return "rate(" + q.sel(metric, matchers...) + "[" + promDuration(window) + "])"
}

// increase is the increase of a counter over the window.
func (q promql) increase(metric string, matchers ...string) string {
	return "increase(" + q.sel(metric, matchers...) + "[" + promDuration(window) + "])"
}

// ratio divides two aggregated rates; series whose denominator is zero (no
// traffic at all) are dropped instead of becoming NaN or +Inf.
func ratio(by []string, numerator, denominator string) string {
	return sumBy(by, numerator) + "\n  /\n(" + sumBy(by, denominator) + " > 0)"
}

// sumBy aggregates an expression, keeping the given labels.
func sumBy(by []string, expr string) string {
	return "sum by (" + strings.Join(by, ", ") + ") (" + expr + ")"
}

// p99 is the 99th percentile of a histogram's observations over the window.
func (q promql) p99(histogram string, by []string) string {
	return "histogram_quantile(0.99, " + sumBy(append(by[:len(by):len(by)], labelLe), q.rate(histogram+"_bucket")) + ")"
}

// eq and ne are label matchers; the values come from closed sets.
func eq(label, value string) string { return label + "=" + strconv.Quote(value) }
func ne(label, value string) string { return label + "!=" + strconv.Quote(value) }

// notIn matches none of the values, each literally.
func notIn(label string, values ...string) string {
	return strings.Replace(in(label, values...), "=~", "!~", 1)
}

// in matches any of the values, each literally.
func in(label string, values ...string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = regexp.QuoteMeta(v)
	}
	return label + "=~" + strconv.Quote(strings.Join(quoted, "|"))
}

// labels lists label names (reads better than a slice literal in the table).
func labels(names ...string) []string { return names }

// promDuration writes a duration the way Prometheus does ("2m", "1h").
func promDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	default:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
}

// number writes a threshold as PromQL reads it back.
func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

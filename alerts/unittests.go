package alerts

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// The promtool unit-test file, in the layout promtool test rules reads.
type (
	testFile struct {
		RuleFiles          []string    `yaml:"rule_files"`
		EvaluationInterval string      `yaml:"evaluation_interval"`
		Tests              []testGroup `yaml:"tests"`
	}
	testGroup struct {
		Name           string          `yaml:"name"`
		Interval       string          `yaml:"interval"`
		InputSeries    []inputSeries   `yaml:"input_series"`
		AlertRuleTests []alertRuleTest `yaml:"alert_rule_test,omitempty"`
		ExprTests      []exprRuleTest  `yaml:"promql_expr_test,omitempty"`
	}
	inputSeries struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	}
	alertRuleTest struct {
		EvalTime  string     `yaml:"eval_time"`
		Alertname string     `yaml:"alertname"`
		ExpAlerts []expAlert `yaml:"exp_alerts"` // empty: must stay silent
	}
	exprRuleTest struct {
		Expr       string      `yaml:"expr"`
		EvalTime   string      `yaml:"eval_time"`
		ExpSamples []expSample `yaml:"exp_samples"`
	}
	expSample struct {
		Labels string  `yaml:"labels"`
		Value  float64 `yaml:"value"`
	}
	expAlert struct {
		ExpLabels      map[string]string `yaml:"exp_labels"`
		ExpAnnotations map[string]string `yaml:"exp_annotations"`
	}
)

// The names promtool tests get, one firing and one silent case per alert.
const (
	firesPrefix  = "fires: "
	silentPrefix = "stays silent: "
	recordsInfix = " records: "
)

// promtoolTests writes the unit tests of every recording rule (the value of
// every series it records from input series) and of every alert: a case
// where it fires, with its exact labels and annotations, and a healthy one
// where it must not.
func promtoolTests(cfg Config, recs []recording, alerts []alert) ([]byte, error) {
	file := testFile{RuleFiles: []string{RulesFile}, EvaluationInterval: "1m"}
	for _, r := range recs {
		file.Tests = append(file.Tests, exprTestGroupOf(cfg, r))
	}
	for _, a := range alerts {
		a.Fires.Fires, a.Silent.Fires = true, false
		for _, c := range append([]testCase{a.Fires, a.Silent}, a.More...) {
			g, err := testGroupOf(cfg, a, c, c.Fires)
			if err != nil {
				return nil, err
			}
			file.Tests = append(file.Tests, g)
		}
	}
	return marshalYAML(generatedHeader+
		"# promtool test rules "+TestsFile+": every recording rule records exactly these\n"+
		"# samples, and every alert fires on its firing case, with exactly these labels\n"+
		"# and annotations, and stays silent on healthy data.\n", file)
}

// testGroupOf is one case of one alert as a promtool test group.
func testGroupOf(cfg Config, a alert, c testCase, fires bool) (testGroup, error) {
	name := a.Name + " " + silentPrefix + c.About
	if fires {
		name = a.Name + " " + firesPrefix + c.About
	}
	g := testGroup{Name: name, Interval: "1m"}
	for _, s := range c.Series {
		g.InputSeries = append(g.InputSeries, inputSeries{
			Series: seriesSelector(s.Metric, merge(cfg.TestLabels, s.Labels)),
			Values: s.Values,
		})
	}
	art := alertRuleTest{EvalTime: promDuration(c.At), Alertname: a.Name, ExpAlerts: []expAlert{}}
	if fires {
		// The alert's labels: its series' labels that survive the
		// aggregation, and severity.
		labels := map[string]string{}
		for name, value := range merge(cfg.TestLabels, c.Labels) {
			if slices.Contains(a.By, name) {
				labels[name] = value
			}
		}
		annotations := a.annotations(cfg)
		description, err := expand(annotations["description"], labels, c.Value)
		if err != nil {
			return g, fmt.Errorf("alerts: %s: description: %w", a.Name, err)
		}
		annotations["description"] = description
		labels[labelSeverity] = a.Severity
		art.ExpAlerts = append(art.ExpAlerts, expAlert{ExpLabels: labels, ExpAnnotations: annotations})
	}
	g.AlertRuleTests = []alertRuleTest{art}
	return g, nil
}

// exprTestGroupOf is the test of one recording rule: the recorded series,
// evaluated on the input series, has exactly the expected samples.
func exprTestGroupOf(cfg Config, r recording) testGroup {
	c := r.Test
	g := testGroup{Name: r.Record + recordsInfix + c.About, Interval: "1m"}
	for _, s := range c.Series {
		g.InputSeries = append(g.InputSeries, inputSeries{
			Series: seriesSelector(s.Metric, merge(cfg.TestLabels, s.Labels)),
			Values: s.Values,
		})
	}
	et := exprRuleTest{Expr: r.Record, EvalTime: promDuration(c.At), ExpSamples: []expSample{}}
	for _, want := range c.Want {
		kept := map[string]string{}
		for name, value := range merge(cfg.TestLabels, want.Labels) {
			if slices.Contains(r.By, name) {
				kept[name] = value
			}
		}
		et.ExpSamples = append(et.ExpSamples, expSample{Labels: seriesSelector(r.Record, kept), Value: want.Value})
	}
	g.ExprTests = []exprRuleTest{et}
	return g
}

// histogramSeries is the _bucket series of a telemetry histogram that
// observes, every minute for 30 minutes, count values of each given value.
// The bucket bounds are the instrument's own.
func histogramSeries(histogram string, labels map[string]string, perMinute map[float64]int) []series {
	var bounds []float64
	for _, m := range obs.Metrics {
		if m.Prom == histogram && m.Kind == obs.Histogram {
			bounds = m.Buckets
		}
	}
	if bounds == nil {
		panic("alerts: no histogram " + histogram) // a typo in the catalogue
	}
	var out []series
	for _, le := range append(slices.Clone(bounds), posInf) {
		cumulative := 0
		for v, n := range perMinute {
			if v <= le {
				cumulative += n
			}
		}
		bound := "+Inf"
		if le != posInf {
			bound = number(le)
		}
		out = append(out, series{histogram + "_bucket", with(labels, labelLe, bound), fmt.Sprintf("0+%dx30", cumulative)})
	}
	return out
}

// posInf is the bound of the last bucket.
var posInf = math.Inf(1)

// seriesSelector writes a series in promtool's input notation, labels sorted.
func seriesSelector(metric string, labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		pairs = append(pairs, eq(name, labels[name]))
	}
	return metric + "{" + strings.Join(pairs, ", ") + "}"
}

// merge returns the union of two label sets (b wins).
func merge(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

package dashboards_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rules of grafana/dashboard-linter (github.com/grafana/dashboard-linter,
// lint/rule_*.go; its default rule set is NewRuleSet in lint/rules.go), one
// test per rule, over the committed JSON. The linter cannot be installed
// here, and its rules are small: these tests say what each one checks, and
// are stricter where the linter is lenient or has a blind spot (each test
// says where). Rules other tests already enforce in full:
//
//   - panel-datasource-rule (lint/rule_panel_datasource.go: a panel reads
//     "$<datasource variable>" or "${<datasource variable>}"): TestPanels,
//     for the queries too.
//   - panel-no-targets-rule (lint/rule_panel_no_targets.go): TestPanels.
//   - target-promql-rule (lint/rule_target_promql.go: every query parses as
//     PromQL once the variables are expanded): TestQueriesParse, with
//     promtool.
//   - target-logql-rule and target-logql-auto-rule apply to Loki queries;
//     queries() fails on any query that is not Prometheus.

// TestLintTemplateDatasource is template-datasource-rule
// (lint/rule_template_datasource.go): the dashboard has a datasource
// variable, named "<type>_datasource", or "datasource" when it is the only
// one, and labelled "<Type> data source" or then "Data source" (a warning in
// the linter, a failure here). The linter's other Prometheus rules only run
// when the first datasource variable is of type prometheus, so that is
// checked too: a dashboard cannot pass them by skipping them.
func TestLintTemplateDatasource(t *testing.T) {
	for _, c := range loadCommitted(t) {
		var dss []dashboard.VariableModel
		for _, v := range c.dash.Templating.List {
			if strings.EqualFold(string(v.Type), string(dashboard.VariableTypeDatasource)) {
				dss = append(dss, v)
			}
		}
		require.NotEmpty(t, dss, "%s has no datasource variable", c.file)
		require.NotNil(t, dss[0].Query, c.file)
		assert.Equal(t, "prometheus", deref(dss[0].Query.String), "%s: the first datasource variable is not Prometheus", c.file)
		for _, v := range dss {
			require.NotNil(t, v.Query, "%s %s", c.file, v.Name)
			typ := deref(v.Query.String)
			names := []string{strings.ToLower(typ) + "_datasource"}
			labels := []string{titleCase(typ) + " data source"}
			if len(dss) == 1 {
				names = append(names, "datasource")
				labels = append(labels, "Data source")
			}
			assert.Contains(t, names, v.Name, "%s: datasource variable name", c.file)
			assert.Contains(t, labels, deref(v.Label), "%s: datasource variable %s label", c.file, v.Name)
		}
	}
}

// TestLintTemplateJob is template-job-rule (lint/rule_template_job.go,
// checkTemplate): see lintFilterTemplate.
func TestLintTemplateJob(t *testing.T) {
	for _, c := range loadCommitted(t) {
		lintFilterTemplate(t, c, "job")
	}
}

// TestLintTemplateInstance is template-instance-rule
// (lint/rule_template_instance.go, with checkTemplate of
// lint/rule_template_job.go): see lintFilterTemplate.
func TestLintTemplateInstance(t *testing.T) {
	for _, c := range loadCommitted(t) {
		lintFilterTemplate(t, c, "instance")
	}
}

// lintFilterTemplate is the linter's checkTemplate: a variable of that name
// exists, is a query variable of the datasource variable ($datasource or
// $prometheus_datasource, either spelling), is labelled with the name in
// title case (a warning in the linter, a failure here), is multi-value, and
// its "All" stands for ".+".
func lintFilterTemplate(t *testing.T, c committed, name string) {
	t.Helper()
	var v *dashboard.VariableModel
	for i := range c.dash.Templating.List {
		if c.dash.Templating.List[i].Name == name {
			v = &c.dash.Templating.List[i]
		}
	}
	require.NotNil(t, v, "%s is missing the %s variable", c.file, name)
	require.NotNil(t, v.Datasource, "%s %s has no datasource", c.file, name)
	assert.Contains(t, []string{"$datasource", "${datasource}", "$prometheus_datasource", "${prometheus_datasource}"},
		deref(v.Datasource.Uid), "%s %s: datasource", c.file, name)
	assert.Equal(t, dashboard.VariableTypeQuery, v.Type, "%s %s", c.file, name)
	assert.Equal(t, titleCase(name), deref(v.Label), "%s %s: label", c.file, name)
	assert.True(t, v.Multi != nil && *v.Multi, "%s %s is not multi-value", c.file, name)
	assert.Equal(t, ".+", deref(v.AllValue), "%s %s: allValue", c.file, name)
}

// titleCase is what the linter's cases.Title(language.English) makes of
// the ASCII names here: each word's first letter upper case, the rest lower.
func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + strings.ToLower(w[1:])
	}
	return strings.Join(words, " ")
}

// TestLintTemplateLabelPromQL is template-label-promql-rule
// (lint/rule_template_label_promql.go): every query variable's query is a
// call of one of the Prometheus datasource's variable functions,
// label_names, label_values, metrics or query_result (the linter finds the
// call anywhere in the string; here it is the whole query). That its PromQL
// parses is TestQueriesParse's check, with promtool.
func TestLintTemplateLabelPromQL(t *testing.T) {
	functions := []string{"label_names", "label_values", "metrics", "query_result"}
	for _, c := range loadCommitted(t) {
		for _, v := range c.dash.Templating.List {
			if v.Type != dashboard.VariableTypeQuery {
				continue
			}
			require.NotNil(t, v.Query, "%s %s", c.file, v.Name)
			q := deref(v.Query.String)
			fn, args, ok := strings.Cut(q, "(")
			assert.True(t, ok && strings.HasSuffix(args, ")") && len(args) > 1, "%s %s: %q is not a function call", c.file, v.Name, q)
			assert.Contains(t, functions, fn, "%s %s: %q", c.file, v.Name, q)
		}
	}
}

// TestLintTemplateOnTimeRangeReload is template-on-time-change-reload-rule
// (lint/rule_template_on_time_change_reload.go): every query variable
// refreshes on time range change (refresh 2), so a menu never offers only
// the jobs or locks of a past range.
func TestLintTemplateOnTimeRangeReload(t *testing.T) {
	for _, c := range loadCommitted(t) {
		for _, v := range c.dash.Templating.List {
			if v.Type != dashboard.VariableTypeQuery {
				continue
			}
			require.NotNil(t, v.Refresh, "%s %s", c.file, v.Name)
			assert.Equal(t, dashboard.VariableRefreshOnTimeRangeChanged, *v.Refresh, "%s %s", c.file, v.Name)
		}
	}
}

// TestLintPanelTitleDescription is panel-title-description-rule
// (lint/rule_panel_title_description.go): every panel has a title and a
// description (the linter checks stat, singlestat, graph, table, timeseries
// and gauge panels; here every panel but the rows is).
func TestLintPanelTitleDescription(t *testing.T) {
	for _, c := range loadCommitted(t) {
		ps, _ := panels(c.dash)
		for _, p := range ps {
			assert.NotEmpty(t, deref(p.Title), "%s panel %d has no title", c.file, id(p))
			assert.NotEmpty(t, deref(p.Description), "%s panel %d (%s) says nothing about itself", c.file, id(p), deref(p.Title))
		}
	}
}

// lintUnits are the unit ids of Grafana's value formats
// (packages/grafana-data/src/valueFormats/categories.ts) that the linter's
// list in lint/rule_panel_units.go holds and lockwatch's panels may use. The
// linter accepts more; add one from its list when a panel needs it, never a
// unit that is not there.
var lintUnits = []string{
	"none", "short", "percent", "percentunit",
	"ns", "µs", "ms", "s", "m", "h", "d",
	"bytes", "decbytes",
	"cps", "ops", "reqps", "rps", "wps", "iops", "cpm", "opm", "rpm", "wpm",
	"bool",
}

// TestLintPanelUnits is panel-units-rule (lint/rule_panel_units.go): every
// panel's unit, a unit override winning over the default, is one the linter
// knows. The linter skips panels with value mappings or with a stat of
// non-numeric fields; here no panel is skipped.
func TestLintPanelUnits(t *testing.T) {
	for _, c := range loadCommitted(t) {
		ps, _ := panels(c.dash)
		for _, p := range ps {
			title := deref(p.Title)
			require.NotNil(t, p.FieldConfig, "%s panel %q", c.file, title)
			unit := deref(p.FieldConfig.Defaults.Unit)
			for _, o := range p.FieldConfig.Overrides {
				for _, prop := range o.Properties {
					if prop.Id == "unit" {
						s, ok := prop.Value.(string)
						require.True(t, ok, "%s panel %q: unit override %v", c.file, title, prop.Value)
						unit = s
					}
				}
			}
			assert.Contains(t, lintUnits, unit, "%s panel %q has no unit or one the linter does not know", c.file, title)
		}
	}
}

// TestLintTargetJob is target-job-rule (lint/rule_target_job_instance.go):
// every series selector of every panel query matches job=~"$job".
func TestLintTargetJob(t *testing.T) {
	lintRequiredMatcher(t, "job")
}

// TestLintTargetInstance is target-instance-rule
// (lint/rule_target_job_instance.go): every series selector of every panel
// query matches instance=~"$instance".
func TestLintTargetInstance(t *testing.T) {
	lintRequiredMatcher(t, "instance")
}

// lintRequiredMatcher is the linter's checkForMatcher over every selector
// (parser.ExtractSelectors): a matcher on label, of type =~, whose value is
// "$label" exactly.
func lintRequiredMatcher(t *testing.T, label string) {
	t.Helper()
	want := promMatcher{label: label, op: "=~", value: "$" + label}
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			if q.variable {
				continue
			}
			sels, err := promSelectors(q.expr)
			require.NoError(t, err, "%s: %s", q.where, q.expr)
			require.NotEmpty(t, sels, "%s: %s", q.where, q.expr)
			for _, s := range sels {
				assert.Contains(t, s.matchers, want, "%s: selector %s lacks %s%s%q: %s", q.where, s.name, label, want.op, want.value, q.expr)
			}
		}
	}
}

// TestLintTargetRateInterval is target-rate-interval-rule
// (lint/rule_target_rate_interval.go): every range selector inside rate or
// irate uses [$__rate_interval]. The linter allows other windows elsewhere
// (in *_over_time, subqueries); here every window of a panel query is
// $__rate_interval, the range of a subquery too.
func TestLintTargetRateInterval(t *testing.T) {
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			if q.variable {
				continue
			}
			sels, err := promSelectors(q.expr)
			require.NoError(t, err, "%s: %s", q.where, q.expr)
			for _, s := range sels {
				if s.call == "rate" || s.call == "irate" {
					assert.Equal(t, "$__rate_interval", s.window, "%s: %s in %s: %s", q.where, s.name, s.call, q.expr)
				}
			}
			for _, w := range windowRE.FindAllStringSubmatch(q.expr, -1) {
				assert.Equal(t, "$__rate_interval", w[1], "%s: %s", q.where, q.expr)
			}
		}
	}
}

// windowRE finds range and subquery windows.
var windowRE = regexp.MustCompile(`\[([^\]]*)\]`)

// TestLintTargetCounterAgg is target-counter-agg-rule
// (lint/rule_target_counter_agg.go): a counter is read only as the range
// selector of rate, irate or increase, never summed or shown raw. The linter
// calls a series a counter when its name ends in _total, and tests the
// suffix on the selector printed with its matchers, so
// x_total{job=~"$job"} escapes it; here the metric name is tested, and the
// histograms' _bucket, _count and _sum series and every counter of
// obs.Metrics count as counters too.
func TestLintTargetCounterAgg(t *testing.T) {
	for _, c := range loadCommitted(t) {
		for _, q := range queries(t, c) {
			if q.variable {
				continue
			}
			sels, err := promSelectors(q.expr)
			require.NoError(t, err, "%s: %s", q.where, q.expr)
			for _, s := range sels {
				if !isCounter(s.name) {
					continue
				}
				ok := s.window != "" && !strings.Contains(s.window, ":") &&
					(s.call == "rate" || s.call == "irate" || s.call == "increase")
				assert.True(t, ok, "%s: counter %s is not aggregated with rate, irate or increase: %s", q.where, s.name, q.expr)
			}
		}
	}
}

// isCounter says a series is a counter's: its name ends in _total, or it is
// a histogram's _bucket, _count or _sum, or telemetry says so.
func isCounter(series string) bool {
	if strings.HasSuffix(series, "_total") {
		return true
	}
	m, ok := telemetryMetric(series)
	return ok && (m.Kind == obs.Counter || m.Kind == obs.Histogram && series != m.Prom)
}

// TestLintUneditable is uneditable-dashboard (lint/rule_uneditable.go): the
// dashboard is not editable. The linter reads a missing "editable" as
// false, Grafana as true; here it must be written, and false.
func TestLintUneditable(t *testing.T) {
	for _, c := range loadCommitted(t) {
		assert.True(t, c.dash.Editable != nil && !*c.dash.Editable, "%s is editable", c.file)
	}
}

// promSelector is a series selector of a PromQL expression, as the linter
// sees them through parser.ExtractSelectors and parser.Walk.
type promSelector struct {
	name     string // metric name; "" for {__name__=~"..."}
	matchers []promMatcher
	window   string // the range of a range selector, x[window]; "" for an instant one
	call     string // the function or aggregation whose parentheses hold the selector
}

// promMatcher is a label matcher, its value unquoted.
type promMatcher struct{ label, op, value string }

// Identifiers of PromQL that are not series names: aggregations (which may
// put by/without before their parentheses), and the keywords.
var (
	promAggregations = map[string]bool{
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
		"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	}
	promGrouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "atan2": true}
)

// promSelectors finds the series selectors of expr, with their matchers,
// range and the call around them. It reads the expressions the generator
// writes — that they are valid PromQL is TestQueriesParse's check — and
// fails on what it does not know rather than guessing.
func promSelectors(expr string) ([]promSelector, error) {
	var out []promSelector
	var calls []string // the call each open parenthesis belongs to, "" for grouping
	pending := ""      // the function or aggregation the next parenthesis opens
	for i := 0; i < len(expr); {
		ch := expr[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			i++
		case ch == '(':
			calls, pending = append(calls, pending), ""
			i++
		case ch == ')':
			if len(calls) == 0 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			calls = calls[:len(calls)-1]
			i++
		case ch == '"' || ch == '\'' || ch == '`':
			_, n, err := promString(expr[i:])
			if err != nil {
				return nil, err
			}
			i += n
		case ch == '[':
			n := strings.IndexByte(expr[i:], ']')
			if n < 0 {
				return nil, fmt.Errorf("unclosed [ at %d", i)
			}
			i += n + 1
		case ch == '{' || isIdentStart(ch):
			name := ""
			if ch != '{' {
				j := i + 1
				for j < len(expr) && isIdentPart(expr[j]) {
					j++
				}
				name = expr[i:j]
				k := skipSpace(expr, j)
				next := byte(0)
				if k < len(expr) {
					next = expr[k]
				}
				switch {
				case promGrouping[name] && next == '(':
					n := strings.IndexByte(expr[k:], ')')
					if n < 0 {
						return nil, fmt.Errorf("unclosed %s ( at %d", name, k)
					}
					i = k + n + 1
					continue
				case next == '(' || promAggregations[name]:
					pending, i = name, j
					continue
				case promKeywords[name]:
					i = j
					continue
				}
				i = k
			}
			s := promSelector{name: name}
			if i < len(expr) && expr[i] == '{' {
				ms, n, err := promMatchers(expr[i:])
				if err != nil {
					return nil, fmt.Errorf("selector %s at %d: %w", name, i, err)
				}
				s.matchers, i = ms, i+n
			}
			if k := skipSpace(expr, i); k < len(expr) && expr[k] == '[' {
				n := strings.IndexByte(expr[k:], ']')
				if n < 0 {
					return nil, fmt.Errorf("unclosed [ at %d", k)
				}
				s.window, i = expr[k+1:k+n], k+n+1
			}
			if len(calls) > 0 {
				s.call = calls[len(calls)-1]
			}
			out = append(out, s)
		case ch >= '0' && ch <= '9' || ch == '.':
			for i < len(expr) && (isIdentPart(expr[i]) || expr[i] == '.') {
				i++
			}
		case strings.IndexByte("+-*/%^=!<>,~@", ch) >= 0:
			i++
		default:
			return nil, fmt.Errorf("unexpected %q at %d (a variable outside a string or window?)", ch, i)
		}
	}
	if len(calls) != 0 {
		return nil, errors.New("unbalanced (")
	}
	return out, nil
}

// promMatchers reads the {label op "value", ...} at the start of s, and
// returns the matchers and the bytes read.
func promMatchers(s string) ([]promMatcher, int, error) {
	var out []promMatcher
	i := skipSpace(s, 1)
	for {
		if i < len(s) && s[i] == '}' {
			return out, i + 1, nil
		}
		j := i
		for j < len(s) && isIdentPart(s[j]) {
			j++
		}
		if j == i {
			return nil, 0, fmt.Errorf("no label name at %d", i)
		}
		m := promMatcher{label: s[i:j]}
		j = skipSpace(s, j)
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(s[j:], op) {
				m.op = op
				break
			}
		}
		if m.op == "" {
			return nil, 0, fmt.Errorf("no matcher operator after %s", m.label)
		}
		j = skipSpace(s, j+len(m.op))
		v, n, err := promString(s[j:])
		if err != nil {
			return nil, 0, fmt.Errorf("value of %s: %w", m.label, err)
		}
		m.value = v
		out = append(out, m)
		i = skipSpace(s, j+n)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		} else if i >= len(s) || s[i] != '}' {
			return nil, 0, fmt.Errorf("unclosed matchers after %s", m.label)
		}
	}
}

// promString reads the quoted string at the start of s and returns its
// value and the bytes read.
func promString(s string) (string, int, error) {
	if s == "" || strings.IndexByte("\"'`", s[0]) < 0 {
		return "", 0, errors.New("no string")
	}
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && s[0] != '`':
			i++
		case s[i] == s[0]:
			raw := s[:i+1]
			if s[0] == '\'' {
				raw = `"` + strings.ReplaceAll(raw[1:i], `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(raw)
			return v, i + 1, err
		}
	}
	return "", 0, errors.New("unterminated string")
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i++
	}
	return i
}

// promSelectors reads the shapes the rules depend on, and rejects what it
// cannot read.
func TestPromSelectors(t *testing.T) {
	got, err := promSelectors(`histogram_quantile(0.99, sum by (le) (rate(a_bucket{job=~"$job", x!="a,b}"}[$__rate_interval]))) >= 0 ` +
		`or sum(b_total) / clamp_min(increase({__name__=~"c|d"}[5m] offset 1m), 1e-09) and on (job) up`)
	require.NoError(t, err)
	assert.Equal(t, []promSelector{
		{name: "a_bucket", matchers: []promMatcher{{"job", "=~", "$job"}, {"x", "!=", "a,b}"}}, window: "$__rate_interval", call: "rate"},
		{name: "b_total", call: "sum"},
		{matchers: []promMatcher{{"__name__", "=~", "c|d"}}, window: "5m", call: "increase"},
		{name: "up"},
	}, got)
	for _, bad := range []string{`rate(x[5m]`, `x{job=~$job}`, `x{job}`, `x{job="a"`, `sum($metric)`} {
		_, err := promSelectors(bad)
		assert.Error(t, err, bad)
	}
}

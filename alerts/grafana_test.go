package alerts_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/expr"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/alerts"
)

// grafanaGroups decodes the Grafana rules strictly with the SDK's types:
// unknown or missing required fields are errors, and every query model must
// be a Prometheus query or a server-side reduce or threshold expression.
func grafanaGroups(t *testing.T, b []byte) []alerting.RuleGroup {
	t.Helper()
	var groups []alerting.RuleGroup
	for i, raw := range unmarshalJSONArray(t, b) {
		var g alerting.RuleGroup
		require.NoError(t, strict(g.UnmarshalJSONStrict(raw)), "rule group %d", i)

		// v0.0.22's strict decoding of a rule drops every query model (see
		// strict), so the models are decoded strictly one by one.
		var shape struct {
			Rules []struct {
				Data []struct {
					Model json.RawMessage `json:"model"`
				} `json:"data"`
			} `json:"rules"`
		}
		require.NoError(t, json.Unmarshal(raw, &shape))
		require.Len(t, shape.Rules, len(g.Rules))
		for j, r := range shape.Rules {
			require.Len(t, r.Data, len(g.Rules[j].Data))
			for k, d := range r.Data {
				g.Rules[j].Data[k].Model = decodeModel(t, d.Model)
			}
		}
		groups = append(groups, g)
	}
	return groups
}

// decodeModel decodes a query model strictly into the SDK type its data
// source (and, for expressions, its type) names.
func decodeModel(t *testing.T, raw json.RawMessage) variants.Dataquery {
	t.Helper()
	var head struct {
		Datasource struct {
			Type string `json:"type"`
		} `json:"datasource"`
		Type string `json:"type"`
	}
	require.NoError(t, json.Unmarshal(raw, &head))
	switch {
	case head.Datasource.Type == "prometheus":
		var q prometheus.Dataquery
		require.NoError(t, strict(q.UnmarshalJSONStrict(raw)), "%s", raw)
		return &q
	case head.Datasource.Type == "__expr__" && head.Type == "reduce":
		var r expr.TypeReduce
		require.NoError(t, strict(r.UnmarshalJSONStrict(raw)), "%s", raw)
		return &expr.Expr{TypeReduce: &r}
	case head.Datasource.Type == "__expr__" && head.Type == "threshold":
		var c expr.TypeThreshold
		require.NoError(t, strict(c.UnmarshalJSONStrict(raw)), "%s", raw)
		return &expr.Expr{TypeThreshold: &c}
	}
	require.Failf(t, "unexpected query model", "%s", raw)
	return nil
}

// strict turns the empty cog.BuildErrors that the SDK's UnmarshalJSONStrict
// methods return on success into nil: in v0.0.22 they return their error
// slice as an error even when it is nil, a non-nil interface. (The same
// mistake inside alerting.Query and expr.Expr makes their strict decoding
// drop the model, hence decodeModel.)
func strict(err error) error {
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}

func grafanaRules(t *testing.T, b []byte) []alerting.Rule {
	t.Helper()
	var rules []alerting.Rule
	for _, g := range grafanaGroups(t, b) {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// grafanaQueries maps each rule's title to its PromQL query.
func grafanaQueries(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range grafanaRules(t, b) {
		require.NotEmpty(t, r.Data, r.Title)
		q, ok := r.Data[0].Model.(*prometheus.Dataquery)
		require.True(t, ok, "%s: the first query is %T, not a Prometheus query", r.Title, r.Data[0].Model)
		out[r.Title] = q.Expr
	}
	return out
}

// TestGrafanaRulesMatchPrometheus: the Grafana-managed rules decode strictly
// and are the Prometheus alerts one for one: same name, group, severity,
// for duration, summary and runbook, the same PromQL with the same
// threshold, and a data source uid left as the documented placeholder. Where
// the Prometheus alert reads a recorded series, the Grafana rule computes it
// from the raw counters instead (its Prometheus may not load the recording
// rules): the recording's expression with each recorded rate replaced by
// the rate it records.

func TestGrafanaRulesMatchPrometheus(t *testing.T) {
	groups := grafanaGroups(t, read(t, alerts.GrafanaFile))
	promRules := decodeRules(t, read(t, alerts.RulesFile))
	promGroup := groupOf(t, read(t, alerts.RulesFile))
	recordings := map[string]string{}
	for _, r := range decodeRecordings(t, read(t, alerts.RulesFile)) {
		recordings[r.Record] = r.Expr
	}

	byTitle := map[string]alerting.Rule{}
	uids := map[string]bool{}
	for _, g := range groups {
		require.NotNil(t, g.Title)
		require.NotNil(t, g.FolderUid)
		assert.Equal(t, alerts.DefaultGrafanaFolderUID, *g.FolderUid)
		for _, r := range g.Rules {
			assert.Equal(t, *g.Title, r.RuleGroup, r.Title)
			assert.Equal(t, alerts.DefaultGrafanaFolderUID, r.FolderUID, r.Title)
			require.NotNil(t, r.Uid, r.Title)
			assert.False(t, uids[*r.Uid], "%s: uid %s used twice", r.Title, *r.Uid)
			uids[*r.Uid] = true
			byTitle[r.Title] = r
		}
	}
	require.Len(t, byTitle, len(promRules), "one Grafana rule per Prometheus alert")

	for _, p := range promRules {
		g, ok := byTitle[p.Alert]
		if !assert.True(t, ok, "no Grafana rule %s", p.Alert) {
			continue
		}
		assert.Equal(t, promGroup[p.Alert], g.RuleGroup, p.Alert)
		assert.Equal(t, p.Labels["severity"], g.Labels["severity"], p.Alert)
		assert.Equal(t, p.For, g.For, p.Alert)
		assert.Equal(t, p.Annotations["summary"], g.Annotations["summary"], p.Alert)
		assert.Equal(t, p.Annotations["runbook_url"], g.Annotations["runbook_url"], p.Alert)
		assert.NotContains(t, g.Annotations["description"], "$value ", "%s: Grafana's $value is not a number", p.Alert)
		assert.Contains(t, g.Annotations["description"], "$values.B.Value", p.Alert)

		value, threshold := splitThreshold(t, p.Expr)
		require.Len(t, g.Data, 3, p.Alert)
		query, ok := g.Data[0].Model.(*prometheus.Dataquery)
		require.True(t, ok, p.Alert)
		assert.Equal(t, inlineRecorded(value, recordings), query.Expr, p.Alert)
		require.NotNil(t, query.Instant, p.Alert)
		assert.True(t, *query.Instant, p.Alert)
		require.NotNil(t, g.Data[0].DatasourceUid, p.Alert)
		assert.Equal(t, alerts.DefaultGrafanaDatasourceUID, *g.Data[0].DatasourceUid, p.Alert)
		require.NotNil(t, query.Datasource, p.Alert)
		assert.Equal(t, alerts.DefaultGrafanaDatasourceUID, *query.Datasource.Uid, p.Alert)

		reduce, ok := g.Data[1].Model.(*expr.Expr)
		require.True(t, ok && reduce.TypeReduce != nil, "%s: the second step is a reduce", p.Alert)
		assert.Equal(t, *g.Data[0].RefId, reduce.TypeReduce.Expression, p.Alert)

		cond, ok := g.Data[2].Model.(*expr.Expr)
		require.True(t, ok && cond.TypeThreshold != nil, "%s: the condition is a threshold", p.Alert)
		assert.Equal(t, *g.Data[2].RefId, g.Condition, p.Alert)
		assert.Equal(t, *g.Data[1].RefId, cond.TypeThreshold.Expression, p.Alert)
		require.Len(t, cond.TypeThreshold.Conditions, 1, p.Alert)
		evaluator := cond.TypeThreshold.Conditions[0].Evaluator
		assert.Equal(t, expr.ExprTypeThresholdConditionsEvaluatorTypeGt, evaluator.Type, p.Alert)
		want, err := strconv.ParseFloat(threshold, 64)
		require.NoError(t, err)
		assert.Equal(t, []float64{want}, evaluator.Params, p.Alert)
	}
}

// TestGrafanaStrictDecodingIsStrict: the check above would notice a field
// the SDK does not know.
func TestGrafanaStrictDecodingIsStrict(t *testing.T) {
	raw := unmarshalJSONArray(t, read(t, alerts.GrafanaFile))[0]
	bad := strings.Replace(string(raw), `"condition":`, `"not_a_rule_field": "C", "condition":`, 1)
	require.NotEqual(t, string(raw), bad)
	var g alerting.RuleGroup
	err := strict(g.UnmarshalJSONStrict([]byte(bad)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not_a_rule_field")
}

// TestGrafanaDatasource: a concrete data source and folder uid replace the
// placeholders everywhere.
func TestGrafanaDatasource(t *testing.T) {
	files := generate(t, alerts.Config{GrafanaDatasourceUID: "prom-main", GrafanaFolderUID: "lockwatch"})
	out := string(files[alerts.GrafanaFile])
	assert.NotContains(t, out, "${")
	for _, r := range grafanaRules(t, files[alerts.GrafanaFile]) {
		assert.Equal(t, "prom-main", *r.Data[0].DatasourceUid)
		assert.Equal(t, "lockwatch", r.FolderUID)
	}
}

// Recorded series in an expression: the recorded ratio an alert reads
// (name{matchers}), and the recorded rates, by job, instance, lock_name and
// result, the ratio is built from.
var (
	recordedSelectorRE = regexp.MustCompile(`^([a-z_]+:lockwatch_[a-z_]+:[a-z0-9_]+)\{([^}]*)\}$`)
	recordedRateRE     = regexp.MustCompile(`([a-z_]+:lockwatch_[a-z_]+:rate5m)\{([^}]*)\}`)
	rateOfRE           = regexp.MustCompile(`^sum by \([^)]*\) \(rate\((lockwatch_[a-z_]+)\{[^}]*\}\[5m\]\)\)$`)
)

// inlineRecorded rewrites an alert's value that reads one recorded series
// (with the job selector) into what it records, computed from the counters:
// the recording's expression with every recorded rate replaced by rate() of
// its counter over 5 minutes, same matchers. Summing the rates by job and
// lock_name is the same as summing their per-instance, per-result sums. A
// value that reads no recorded series is returned as it is.
func inlineRecorded(value string, recordings map[string]string) string {
	m := recordedSelectorRE.FindStringSubmatch(value)
	if m == nil {
		return value
	}
	expr, ok := recordings[m[1]]
	if !ok {
		return value
	}
	return recordedRateRE.ReplaceAllStringFunc(expr, func(sel string) string {
		parts := recordedRateRE.FindStringSubmatch(sel)
		counter := rateOfRE.FindStringSubmatch(recordings[parts[1]])
		if counter == nil {
			return sel
		}
		return "rate(" + counter[1] + "{" + parts[2] + "}[5m])"
	})
}

package alerts

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/expr"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// A Grafana-managed rule runs three steps: the PromQL query (A, an instant
// query returning Value, one series per instance), a reduce to one number
// per series (B) and the threshold that is the rule's condition (C).
const (
	refQuery     = "A"
	refReduce    = "B"
	refCondition = "C"
	// exprDatasource is the uid and type of Grafana's server-side expressions.
	exprDatasource = "__expr__"
	// grafanaInterval is the evaluation interval of every rule group, in
	// seconds: Prometheus's common default.
	grafanaInterval = 60
	// queryRange is how far back, in seconds, the query's time range starts;
	// the expressions carry their own [5m] windows and are instant queries.
	queryRange = 600
)

// grafanaRules writes the Grafana-managed rules: an array of rule groups in
// the body format of Grafana's provisioning API (PUT
// /api/v1/provisioning/folder/{folderUid}/rule-groups/{group}).
func grafanaRules(cfg Config, alerts []alert) ([]byte, error) {
	var out []alerting.RuleGroup
	for _, g := range groups(alerts) {
		group := alerting.NewRuleGroupBuilder(g[0].Group).
			FolderUid(cfg.GrafanaFolderUID).
			Interval(grafanaInterval)
		for _, a := range g {
			group.WithRule(grafanaRule(cfg, a))
		}
		built, err := group.Build()
		if err != nil {
			return nil, fmt.Errorf("alerts: Grafana rule group %s: %w", g[0].Group, err)
		}
		out = append(out, built)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// grafanaRule is one alert as a Grafana-managed rule: same name, severity,
// for-duration and annotations (with $value rewritten for Grafana).
func grafanaRule(cfg Config, a alert) *alerting.RuleBuilder {
	annotations := a.annotations(cfg)
	annotations["description"] = grafanaTemplate(annotations["description"])

	prom := common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr(cfg.GrafanaDatasourceUID)}
	sse := common.DataSourceRef{Type: cog.ToPtr(exprDatasource), Uid: cog.ToPtr(exprDatasource)}

	query := prometheus.NewDataqueryBuilder().
		Datasource(prom).
		RefId(refQuery).
		Expr(a.Value).
		Instant()
	reduce := expr.NewExprBuilder().TypeReduce(expr.NewTypeReduceBuilder().
		Datasource(sse).
		RefId(refReduce).
		Expression(refQuery).
		Reducer(expr.TypeReduceReducerLast).
		// A series without a number has nothing to compare; dropping it
		// keeps the rule out of the error state.
		Settings(expr.NewExprTypeReduceSettingsBuilder().Mode(expr.ExprTypeReduceSettingsModeDropNN)))
	threshold := expr.NewExprBuilder().TypeThreshold(expr.NewTypeThresholdBuilder().
		Datasource(sse).
		RefId(refCondition).
		Expression(refReduce).
		Conditions([]cog.Builder[expr.ExprTypeThresholdConditions]{
			expr.NewExprTypeThresholdConditionsBuilder().Evaluator(
				expr.NewExprTypeThresholdConditionsEvaluatorBuilder().
					Type(expr.ExprTypeThresholdConditionsEvaluatorTypeGt).
					Params([]float64{a.Threshold})),
		}))

	return alerting.NewRuleBuilder(a.Name).
		Uid(a.anchor()).
		RuleGroup(a.Group).
		FolderUID(cfg.GrafanaFolderUID).
		OrgID(1).
		Condition(refCondition).
		For(promDuration(a.For)).
		// The catalogue's choice, with its reason there; a failing
		// query is an error.
		NoDataState(a.NoData.State).
		ExecErrState(alerting.RuleExecErrStateError).
		Labels(map[string]string{labelSeverity: a.Severity}).
		Annotations(annotations).
		WithQuery(alerting.NewQueryBuilder(refQuery).
			DatasourceUid(cfg.GrafanaDatasourceUID).
			RelativeTimeRange(queryRange, 0).
			Model(query)).
		WithQuery(alerting.NewQueryBuilder(refReduce).
			DatasourceUid(exprDatasource).
			Model(reduce)).
		WithQuery(alerting.NewQueryBuilder(refCondition).
			DatasourceUid(exprDatasource).
			Model(threshold))
}

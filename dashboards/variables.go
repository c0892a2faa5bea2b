package dashboards

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// allValue is what "All" stands for in the =~ matchers: every value, and
// series without the label (a fence metric has no lock_name) too.
const allValue = ".*"

// variables are the dashboard's filters, datasource first: every query reads
// the datasource variable, so the dashboard imports into any Grafana and the
// datasource is picked from the variable's menu.
func variables() []cog.Builder[dashboard.VariableModel] {
	// Every process that uses lockwatch either takes locks (and counts its
	// acquires) or guards a resource (and counts its fence checks): the
	// union finds the jobs and instances of both sides.
	anyProcess := `{__name__=~"` + obs.PromLeaseAcquires + "|" + obs.PromFenceChecks + `"}`
	jobs := labelValues(anyProcess, "job")
	instances := labelValues(strings.TrimSuffix(anyProcess, "}")+`, job=~"$`+varJob+`"}`, "instance")
	locks := labelValues(acquires.Prom+`{job=~"$`+varJob+`", instance=~"$`+varInstance+`"}`, obs.LabelLockName)

	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(varDatasource).
			Label("Data source").
			Type("prometheus"),
		filter(varJob, "Job", jobs),
		filter(varInstance, "Instance", instances),
		filter(varLockName, "Lock", locks),
	}
}

// filter is a multi-value variable from a label_values query, "All" by
// default.
func filter(name, label, q string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: ptr(q)}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalCaseInsensitiveAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(allValue).
		Current(dashboard.VariableOption{
			Selected: ptr(true),
			Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
			Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
		})
}

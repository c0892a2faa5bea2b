package dashboards

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// What "All" stands for in the =~ matchers. job and instance: any value,
// ".+", which grafana/dashboard-linter's template-job-rule and
// template-instance-rule require (every scraped series has both labels).
// lock_name: ".*", which also matches a series without the label:
// Prometheus drops an empty one.
const (
	allScraped = ".+"
	allLocks   = ".*"
)

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
		filter(varJob, "Job", jobs, allScraped),
		filter(varInstance, "Instance", instances, allScraped),
		filter(varLockName, "Lock", locks, allLocks),
	}
}

// filter is a multi-value variable from a label_values query, "All" (which
// stands for allValue) by default.
func filter(name, label, q, allValue string) *dashboard.QueryVariableBuilder {
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

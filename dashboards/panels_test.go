package dashboards_test

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/dashboards"
)

const datasourceVar = "${datasource}"

// isVariableDatasource says a datasource reference is the dashboard's
// Prometheus datasource variable, not a UID of somebody's Grafana.
func isVariableDatasource(ref *common.DataSourceRef) bool {
	return ref != nil && deref(ref.Type) == "prometheus" && deref(ref.Uid) == datasourceVar
}

func TestDashboards(t *testing.T) {
	want := map[string]struct{ uid, title string }{
		"overview.json":    {dashboards.OverviewUID, "lockwatch / Overview"},
		"lock-detail.json": {dashboards.LockDetailUID, "lockwatch / Lock detail"},
	}
	cs := loadCommitted(t)
	require.Len(t, cs, len(want))
	for _, c := range cs {
		w, ok := want[c.file]
		require.True(t, ok, "unexpected dashboard %s", c.file)
		assert.Equal(t, w.uid, deref(c.dash.Uid), c.file)
		assert.Equal(t, w.title, deref(c.dash.Title), c.file)
		assert.Nil(t, c.dash.Id, "%s: a numeric id is one Grafana's; import assigns its own", c.file)
		assert.Contains(t, c.dash.Tags, dashboards.Tag, c.file)
	}
}

// Variables: datasource first (TestLintTemplateDatasource checks it), then
// job and instance (TestLintTemplateJob, TestLintTemplateInstance) and
// lock_name, all three with "All", selected by default, from label_values.
// lock_name follows the linter's rule for job and instance, but for its
// "All", ".*" (see allLocks in variables.go).
func TestVariables(t *testing.T) {
	for _, c := range loadCommitted(t) {
		vars := c.dash.Templating.List
		var names []string
		for _, v := range vars {
			names = append(names, v.Name)
		}
		require.Equal(t, []string{"datasource", "job", "instance", "lock_name"}, names, c.file)

		for _, v := range vars[1:] {
			assert.True(t, isVariableDatasource(v.Datasource), "%s %s reads %v", c.file, v.Name, v.Datasource)
			assert.True(t, v.IncludeAll != nil && *v.IncludeAll, "%s %s has no All", c.file, v.Name)
			require.NotNil(t, v.Current, "%s %s", c.file, v.Name)
			assert.Equal(t, []string{"$__all"}, v.Current.Value.ArrayOfString, "%s %s: All is not the default", c.file, v.Name)
			require.NotNil(t, v.Query, "%s %s", c.file, v.Name)
			assert.True(t, strings.HasPrefix(deref(v.Query.String), "label_values("), "%s %s", c.file, v.Name)
		}
		lock := vars[3]
		assert.Equal(t, dashboard.VariableTypeQuery, lock.Type, c.file)
		assert.Equal(t, "Lock", deref(lock.Label), c.file)
		assert.True(t, lock.Multi != nil && *lock.Multi, "%s lock_name is not multi-value", c.file)
		assert.Equal(t, ".*", deref(lock.AllValue), c.file)
	}
}

// Panels: explicit, unique, non-zero ids; the datasource variable on panels
// and queries (grafana/dashboard-linter's panel-datasource-rule, and more);
// a query on every panel (its panel-no-targets-rule); lastNotNull and
// thresholds on stats, above every time series; legends shown; exemplars on
// every latency query; nothing overlapping or off the grid. Units, titles
// and descriptions are the linter's rules in lint_test.go.
func TestPanels(t *testing.T) {
	for _, c := range loadCommitted(t) {
		t.Run(c.file, func(t *testing.T) {
			ps, rows := panels(c.dash)
			require.NotEmpty(t, rows)
			ids := map[uint32]string{}
			for _, r := range rows {
				assert.NotZero(t, r.Id, "row %q", deref(r.Title))
				assert.NotContains(t, ids, r.Id, "row %q reuses an id", deref(r.Title))
				ids[r.Id] = deref(r.Title)
			}

			var lowestSeries, highestStat uint32 = ^uint32(0), 0
			stats, series, timelines := 0, 0, 0
			for _, p := range ps {
				title := deref(p.Title)
				require.NotNil(t, p.Id, "panel %q has no id", title)
				assert.NotZero(t, *p.Id, "panel %q", title)
				assert.NotContains(t, ids, *p.Id, "panel %q reuses id %d", title, *p.Id)
				ids[*p.Id] = title

				require.NotNil(t, p.FieldConfig, "panel %q", title)
				assert.True(t, isVariableDatasource(p.Datasource), "panel %q reads %v", title, p.Datasource)
				require.NotEmpty(t, p.Targets, "panel %q has no query", title)
				exemplars := false
				for _, target := range p.Targets {
					q, ok := target.(*prometheus.Dataquery)
					require.True(t, ok, "panel %q: query %T", title, target)
					assert.True(t, isVariableDatasource(q.Datasource), "panel %q query %s reads %v", title, deref(q.RefId), q.Datasource)
					exemplar := q.Exemplar != nil && *q.Exemplar
					exemplars = exemplars || exemplar
					if strings.Contains(q.Expr, "histogram_quantile") && p.Type == "timeseries" {
						assert.True(t, exemplar, "latency panel %q query %s has exemplars off", title, deref(q.RefId))
					}
				}
				if deref(p.FieldConfig.Defaults.Unit) == "s" && p.Type == "timeseries" {
					assert.True(t, exemplars, "latency panel %q has exemplars off", title)
				}

				require.NotNil(t, p.GridPos, "panel %q", title)
				switch p.Type {
				case "stat":
					stats++
					opts, ok := p.Options.(*stat.Options)
					require.True(t, ok, "panel %q options are %T", title, p.Options)
					assert.Equal(t, []string{"lastNotNull"}, opts.ReduceOptions.Calcs, "stat %q", title)
					require.NotNil(t, p.FieldConfig.Defaults.Thresholds, "stat %q", title)
					assert.GreaterOrEqual(t, len(p.FieldConfig.Defaults.Thresholds.Steps), 2, "stat %q has no threshold", title)
					highestStat = max(highestStat, p.GridPos.Y+p.GridPos.H)
				case "timeseries":
					series++
					opts, ok := p.Options.(*timeseries.Options)
					require.True(t, ok, "panel %q options are %T", title, p.Options)
					assert.True(t, opts.Legend.ShowLegend, "panel %q hides its legend", title)
					assert.NotEqual(t, common.LegendDisplayModeHidden, opts.Legend.DisplayMode, "panel %q hides its legend", title)
					lowestSeries = min(lowestSeries, p.GridPos.Y)
				case "state-timeline":
					timelines++
					opts, ok := p.Options.(*statetimeline.Options)
					require.True(t, ok, "panel %q options are %T", title, p.Options)
					assert.True(t, opts.Legend.ShowLegend, "panel %q hides its legend", title)
					assert.NotEmpty(t, p.FieldConfig.Defaults.Mappings, "panel %q names no state", title)
				default:
					t.Errorf("panel %q: unexpected type %s", title, p.Type)
				}
			}
			assert.Positive(t, stats)
			assert.Positive(t, series)
			if c.file == "overview.json" {
				assert.Equal(t, 1, timelines, "the overview shows who leads each election")
			}
			assert.LessOrEqual(t, highestStat, lowestSeries, "stats belong above the time series")
			assertGrid(t, c.dash)
		})
	}
}

// assertGrid checks that panels and rows stay on the 24-column grid and do
// not overlap.
func assertGrid(t *testing.T, d dashboard.Dashboard) {
	t.Helper()
	type box struct {
		name string
		pos  dashboard.GridPos
	}
	var boxes []box
	for _, p := range d.Panels {
		switch {
		case p.Panel != nil:
			boxes = append(boxes, box{deref(p.Panel.Title), *p.Panel.GridPos})
		case p.RowPanel != nil:
			boxes = append(boxes, box{"row " + deref(p.RowPanel.Title), *p.RowPanel.GridPos})
		}
	}
	for i, a := range boxes {
		assert.LessOrEqual(t, a.pos.X+a.pos.W, uint32(24), "%s is off the grid", a.name)
		for _, b := range boxes[i+1:] {
			overlap := a.pos.X < b.pos.X+b.pos.W && b.pos.X < a.pos.X+a.pos.W &&
				a.pos.Y < b.pos.Y+b.pos.H && b.pos.Y < a.pos.Y+a.pos.H
			assert.False(t, overlap, "%s overlaps %s", a.name, b.name)
		}
	}
}

// TestFenceChecksDescribeEveryResult: a panel that splits fence checks by
// result names every result in its description, so that a refusal result
// added to telemetry is explained where it is shown.
func TestFenceChecksDescribeEveryResult(t *testing.T) {
	found := 0
	for _, c := range loadCommitted(t) {
		ps, _ := panels(c.dash)
		for _, p := range ps {
			for _, target := range p.Targets {
				q, ok := target.(*prometheus.Dataquery)
				if !ok || !strings.Contains(q.Expr, obs.PromFenceChecks) || !strings.Contains(q.Expr, "by (resource, result)") {
					continue
				}
				found++
				for _, r := range obs.FenceResults {
					assert.Regexp(t, `\b`+string(r)+`\b`, deref(p.Description), "%s panel %q", c.file, deref(p.Title))
				}
			}
		}
	}
	assert.Positive(t, found, "no panel shows fence checks by result")
}

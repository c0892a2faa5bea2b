package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Panel sizes on Grafana's 24-column grid: eight stats or two time series to
// a line.
const (
	statWidth    = 3
	statHeight   = 4
	seriesWidth  = 12
	seriesHeight = 8
)

// datasource is the reference of every panel and query: the dashboard's
// datasource variable.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${" + varDatasource + "}")}
}

func ptr[T any](v T) *T { return &v }

// query is one PromQL target of a panel.
type query struct {
	expr   string
	legend string
}

// target builds a panel's query. refID is its letter in the panel; exemplar
// asks Prometheus for the exemplars (trace links) of the series expr reads.
func target(q query, refID string, exemplar bool) *prometheus.DataqueryBuilder {
	t := prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		RefId(refID).
		Expr(q.expr).
		LegendFormat(q.legend).
		EditorMode(prometheus.QueryEditorModeCode).
		Range()
	if exemplar {
		t = t.Exemplar(true)
	}
	return t
}

// refID names the i-th query of a panel: A, B, ...
func refID(i int) string { return string(rune('A' + i)) }

// threshold is a step: value and above are shown in color.
type threshold struct {
	value float64
	color string
}

// thresholds starts green and changes color at each step.
func thresholds(steps ...threshold) *dashboard.ThresholdsConfigBuilder {
	s := []dashboard.Threshold{{Color: "green"}}
	for _, st := range steps {
		s = append(s, dashboard.Threshold{Value: ptr(st.value), Color: st.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(s)
}

// statPanel is a single number, reduced with lastNotNull (the newest value:
// "right now", and not a gap at the edge of the graph), coloured by
// thresholds, with a sparkline.
func statPanel(id uint32, title, description, unit string, q query, steps ...threshold) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(datasource()).
		WithTarget(target(q, refID(0), false)).
		Unit(unit).
		Min(0).
		Thresholds(thresholds(steps...)).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeArea).
		TextMode(common.BigValueTextModeAuto).
		JustifyMode(common.BigValueJustifyModeAuto).
		Orientation(common.VizOrientationAuto).
		Height(statHeight).
		Span(statWidth)
}

// seriesPanel is a time series of one or more queries, legend shown. exemplars
// marks latency panels: their points link to the traces of the observations.
func seriesPanel(id uint32, title, description, unit string, exemplars bool, qs ...query) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(datasource()).
		Unit(unit).
		Min(0).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdPaletteClassic)).
		Legend(common.NewVizLegendOptionsBuilder().
			ShowLegend(true).
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			Calcs([]string{})).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)).
		DrawStyle(common.GraphDrawStyleLine).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: ptr(false)}).
		Height(seriesHeight).
		Span(seriesWidth)
	for i, q := range qs {
		p = p.WithTarget(target(q, refID(i), exemplars))
	}
	return p
}

// row is a section title across the dashboard; the panels added after it
// belong to it.
func row(id uint32, title string) *dashboard.RowBuilder {
	return dashboard.NewRowBuilder(title).Id(id).Collapsed(false)
}

package dashboards

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Dashboard UIDs: stable, so links and bookmarks survive a re-import.
const (
	OverviewUID   = "lockwatch-overview"
	LockDetailUID = "lockwatch-lock-detail"
)

// Tag is on every lockwatch dashboard; the dashboards link to each other by
// it.
const Tag = "lockwatch"

// dashboards are the generated files and the functions that build them.
var dashboards = []struct {
	file  string
	build func() *dashboard.DashboardBuilder
}{
	{"overview.json", overview},
	{"lock-detail.json", lockDetail},
}

// Generate builds every dashboard and returns its JSON (Grafana's dashboard
// model, indented, newline-terminated) by file name. The output depends on
// nothing but this package and telemetry's names: the same code gives the
// same bytes, which is what the committed files are tested against.
func Generate() (map[string][]byte, error) {
	out := make(map[string][]byte, len(dashboards))
	for _, d := range dashboards {
		dash, err := d.build().Build()
		if err != nil {
			return nil, fmt.Errorf("dashboards: build %s: %w", d.file, err)
		}
		// The SDK defaults every link to placement "inControlsMenu", which
		// hides it in the controls menu; without a placement, Grafana shows
		// it above the panels, where a drill-down link belongs.
		for i := range dash.Links {
			dash.Links[i].Placement = nil
		}
		b, err := json.MarshalIndent(dash, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("dashboards: encode %s: %w", d.file, err)
		}
		out[d.file] = append(unescapeHTML(b), '\n')
	}
	return out, nil
}

// newDashboard has what both dashboards share: tags, time range, refresh,
// shared crosshair, the variables, and links to the other lockwatch
// dashboards that keep the time range and the variables. The dashboards are
// read-only ("editable": false, as grafana/dashboard-linter's
// uneditable-dashboard rule wants): the generator is their source, and an
// edit saved in Grafana would be lost at the next import or provisioning.
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Readonly().
		Description(description).
		Tags([]string{Tag}).
		Timezone("browser").
		Time("now-1h", "now").
		Refresh("30s").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Variables(variables()).
		Link(dashboard.NewDashboardLinkBuilder("lockwatch").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{Tag}).
			AsDropdown(false).
			IncludeVars(true).
			KeepTime(true))
}

// section adds a row and the panels under it.
func section(d *dashboard.DashboardBuilder, r *dashboard.RowBuilder, panels ...cog.Builder[dashboard.Panel]) {
	d.WithRow(r)
	for _, p := range panels {
		d.WithPanel(p)
	}
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes encoding/json
// writes for <, > and & back into the characters, so ">= 0" in a query reads
// as such in the committed file. (json.Encoder's SetEscapeHTML(false) cannot
// do it: the SDK's own MarshalJSON methods escape before it sees the bytes.)
// It steps over every escape sequence whole, so an escaped backslash
// followed by "u003e" stays as it is.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}

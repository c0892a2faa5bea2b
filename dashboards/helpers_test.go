package dashboards_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/dashboards"
)

// committed is one committed dashboard file, decoded strictly with the SDK's
// types.
type committed struct {
	file string
	raw  []byte
	dash dashboard.Dashboard
}

// loadCommitted reads every file Generate writes, as committed, in name
// order. The other tests check these bytes: they are what users import, and
// TestCommittedFilesAreFresh proves they are what the generator makes.
func loadCommitted(t *testing.T) []committed {
	t.Helper()
	files, err := dashboards.Generate()
	require.NoError(t, err)
	var out []committed
	for _, name := range slices.Sorted(maps.Keys(files)) {
		raw, err := os.ReadFile(name)
		require.NoError(t, err, "the committed %s is missing: run go generate ./dashboards/...", name)
		var strict dashboard.Dashboard
		require.NoError(t, strictDecode(raw, &strict), "%s does not decode strictly into the SDK's dashboard types", name)
		// The value to inspect comes from the SDK's ordinary decoder: the
		// strict one of v0.0.22 validates, but leaves every panel nil (see
		// strictDecode). TestStrictlyValid proves the two agree on the bytes.
		var d dashboard.Dashboard
		require.NoError(t, json.Unmarshal(raw, &d), name)
		out = append(out, committed{file: name, raw: raw, dash: d})
	}
	require.NotEmpty(t, out)
	return out
}

// strictDecode checks a dashboard with the SDK's strict decoder, which fails
// on unknown fields, missing required ones and wrong types, in panels,
// options and queries too. In SDK v0.0.22 every UnmarshalJSONStrict returns
// its error list even when it is empty: a nil cog.BuildErrors in a non-nil
// error interface. Only a non-empty list is a failure here. Inside the SDK
// the same mistake makes PanelOrRowPanel drop every panel it decoded (it
// returns the "error" before keeping the panel), while errors still reach the
// top: d is fit for validation only.
func strictDecode(raw []byte, d *dashboard.Dashboard) error {
	err := d.UnmarshalJSONStrict(raw)
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}

// panels are a dashboard's panels, those inside collapsed rows included, and
// its rows.
func panels(d dashboard.Dashboard) (ps []dashboard.Panel, rows []dashboard.RowPanel) {
	for _, p := range d.Panels {
		switch {
		case p.Panel != nil:
			ps = append(ps, *p.Panel)
		case p.RowPanel != nil:
			rows = append(rows, *p.RowPanel)
			ps = append(ps, p.RowPanel.Panels...)
		}
	}
	return ps, rows
}

// promQuery is a PromQL expression of a dashboard and where it is.
type promQuery struct {
	where    string // "overview.json panel 101 (Title) A" or "overview.json variable job"
	expr     string
	exemplar bool
	variable bool // a variable's series selector rather than a panel query
}

// labelValuesRE takes label_values(<selector>, <label>) apart.
var labelValuesRE = regexp.MustCompile(`^label_values\((.+), *([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// queries are every PromQL expression of c: the panels' targets, and the
// series selectors of the query variables' label_values.
func queries(t *testing.T, c committed) []promQuery {
	t.Helper()
	var out []promQuery
	ps, _ := panels(c.dash)
	for _, p := range ps {
		for _, target := range p.Targets {
			q, ok := target.(*prometheus.Dataquery)
			require.True(t, ok, "%s panel %d: target %T is not a Prometheus query", c.file, id(p), target)
			out = append(out, promQuery{
				where:    c.file + " panel " + itoa(id(p)) + " (" + deref(p.Title) + ") " + deref(q.RefId),
				expr:     q.Expr,
				exemplar: q.Exemplar != nil && *q.Exemplar,
			})
		}
	}
	for _, v := range c.dash.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		require.NotNil(t, v.Query, "%s variable %s has no query", c.file, v.Name)
		require.NotNil(t, v.Query.String, "%s variable %s: query is not a string", c.file, v.Name)
		m := labelValuesRE.FindStringSubmatch(*v.Query.String)
		require.NotNil(t, m, "%s variable %s: %q is not label_values(selector, label)", c.file, v.Name, *v.Query.String)
		out = append(out, promQuery{where: c.file + " variable " + v.Name, expr: m[1], variable: true})
	}
	require.NotEmpty(t, out)
	return out
}

func id(p dashboard.Panel) uint32 {
	if p.Id == nil {
		return 0
	}
	return *p.Id
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

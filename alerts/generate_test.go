package alerts_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/alerts"
)

// TestCommittedFilesAreFresh: the committed files are exactly what the
// generator writes with the default configuration.
func TestCommittedFilesAreFresh(t *testing.T) {
	files := generate(t, alerts.Config{})
	require.ElementsMatch(t,
		[]string{alerts.RulesFile, alerts.TestsFile, alerts.GrafanaFile, alerts.AlertmanagerFile},
		slices.Collect(maps.Keys(files)))
	for name, want := range files {
		got, err := os.ReadFile(name)
		require.NoError(t, err, "%s is missing: run go generate ./alerts/...", name)
		if line, committed, generated, stale := firstDifference(got, want); stale {
			t.Errorf("%s is stale: run go generate ./alerts/...\nline %d\n  committed: %q\n  generated: %q", name, line, committed, generated)
		}
	}
}

// firstDifference finds the first line where two files differ.
func firstDifference(a, b []byte) (line int, lineA, lineB string, differ bool) {
	as, bs := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if x != y || (i >= len(as)) != (i >= len(bs)) {
			return i + 1, x, y, true
		}
	}
	return 0, "", "", false
}

// TestGenerateIsDeterministic: two runs write the same bytes (map order must
// not leak into the output).
func TestGenerateIsDeterministic(t *testing.T) {
	first := generate(t, alerts.Config{})
	for range 5 {
		assert.Equal(t, first, generate(t, alerts.Config{}))
	}
}

// TestJobSelector: a custom job selector lands in every series selector of
// every expression, Prometheus (recording rules included) and Grafana alike,
// and the rules and their
// tests (with test labels that satisfy it) still pass promtool.
func TestJobSelector(t *testing.T) {
	const selector = `job="payments"`
	custom := generate(t, alerts.Config{
		JobSelector: selector,
		TestLabels:  map[string]string{"job": "payments", "instance": "127.0.0.1:9465"},
	})
	defaults := decodeAllRules(t, generate(t, alerts.Config{})[alerts.RulesFile])
	rules := decodeAllRules(t, custom[alerts.RulesFile])
	require.Len(t, rules, len(defaults))

	grafana := grafanaQueries(t, custom[alerts.GrafanaFile])
	for i, r := range rules {
		name := r.Alert + r.Record
		assert.NotEqual(t, defaults[i].Expr, r.Expr, name)
		assert.NotContains(t, r.Expr, alerts.DefaultJobSelector, name)
		exprs := []string{r.Expr}
		if r.Alert != "" {
			exprs = append(exprs, grafana[r.Alert])
		}
		for _, expr := range exprs {
			selectors := strings.Count(expr, "{")
			assert.Positive(t, selectors, name)
			assert.Equal(t, selectors, strings.Count(expr, "{"+selector), "%s: every selector starts with the job selector: %s", name, expr)
		}
	}

	dir := t.TempDir()
	for name, b := range custom {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	promtool(t, "check", "rules", filepath.Join(dir, alerts.RulesFile))
	promtool(t, "test", "rules", filepath.Join(dir, alerts.TestsFile))
}

// TestDefaultSelectorInEveryExpression: the committed rules, recording
// rules included, watch the default job selector in every selector too.
func TestDefaultSelectorInEveryExpression(t *testing.T) {
	for _, r := range decodeAllRules(t, read(t, alerts.RulesFile)) {
		assert.Equal(t, strings.Count(r.Expr, "{"), strings.Count(r.Expr, "{"+alerts.DefaultJobSelector), r.Alert+r.Record)
	}
}

// TestConfigErrors: configurations that would produce broken rules are
// refused.
func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]alerts.Config{
		"braces in the selector":  {JobSelector: `{job="a"}`},
		"dangling comma":          {JobSelector: `job="a",`},
		"runbook with a fragment": {RunbookURL: "https://example.com/runbook#x"},
		"test labels set lock":    {TestLabels: map[string]string{"lock_name": "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := alerts.Generate(cfg)
			assert.Error(t, err)
		})
	}
}

// TestRunbookURL: a custom runbook address is every alert's runbook_url
// base, in both outputs.
func TestRunbookURL(t *testing.T) {
	const base = "https://wiki.example.com/lockwatch"
	files := generate(t, alerts.Config{RunbookURL: base})
	for _, r := range decodeRules(t, files[alerts.RulesFile]) {
		assert.Equal(t, base+"#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"])
	}
	for _, r := range grafanaRules(t, files[alerts.GrafanaFile]) {
		assert.Equal(t, base+"#"+strings.ToLower(r.Title), r.Annotations["runbook_url"])
	}
}

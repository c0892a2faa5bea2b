package dashboards_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/promtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grafanaVars stands in for the variables Grafana interpolates before a query
// reaches Prometheus: a window for $__rate_interval, match-all for the
// filters.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$job", ".*",
	"$instance", ".*",
	"$lock_name", ".*",
)

// recordSafe matches what a recording rule name cannot hold.
var recordSafe = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// rulesFile is a Prometheus rule file. JSON is YAML, so promtool reads it as
// it is.
type rulesFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Record string `json:"record"`
	Expr   string `json:"expr"`
}

// checkRules writes groups to a rule file and runs promtool check rules on
// it, lint problems fatal.
func checkRules(t *testing.T, groups []ruleGroup) (string, error) {
	t.Helper()
	promtool := promtest.Promtool(t)
	raw, err := json.MarshalIndent(rulesFile{groups}, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "dashboards.rules.yml")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	out, err := exec.CommandContext(t.Context(), promtool, "check", "rules", "--lint-fatal", path).CombinedOutput()
	return string(out) + "\nrules:\n" + string(raw), err
}

// Every query of every panel, and every variable's series selector, parses
// as PromQL once Grafana's variables are substituted: promtool checks them
// wrapped as recording rules, one group per dashboard.
func TestQueriesParse(t *testing.T) {
	var groups []ruleGroup
	total := 0
	for _, c := range loadCommitted(t) {
		g := ruleGroup{Name: c.file}
		for i, q := range queries(t, c) {
			expr := grafanaVars.Replace(q.expr)
			require.NotContains(t, expr, "$", "%s: a variable this test does not know: %s", q.where, q.expr)
			if q.variable {
				expr = "count(" + expr + ")"
			}
			// Record names are unique across groups, or promtool's lint
			// reports duplicates.
			record := fmt.Sprintf("dashboard:%s_query_%d:check", recordSafe.ReplaceAllString(c.file, "_"), i)
			g.Rules = append(g.Rules, rule{Record: record, Expr: expr})
		}
		total += len(g.Rules)
		groups = append(groups, g)
	}
	out, err := checkRules(t, groups)
	require.NoError(t, err, "promtool rejects a dashboard query:\n%s", out)
	assert.Contains(t, out, fmt.Sprintf("SUCCESS: %d rules found", total), out)
}

// The check above is only as good as promtool's verdict: a broken expression
// must fail it.
func TestQueriesParseRejectsBrokenPromQL(t *testing.T) {
	out, err := checkRules(t, []ruleGroup{{Name: "broken", Rules: []rule{
		{Record: "dashboard:broken:check", Expr: `sum(rate(lockwatch_lease_acquires_total{job=~".*"}[5m])`},
	}}})
	assert.Error(t, err, "promtool accepted an unbalanced expression:\n%s", out)
}

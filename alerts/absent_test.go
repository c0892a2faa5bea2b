package alerts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/alerts"
)

// absentQueryTest evaluates LockwatchMetricsAbsent's query (the Grafana
// rule's, the Prometheus rule's before its threshold) on three data sets:
// a job exporting now answers 0, a job gone silent its count of series, and
// data with none of lockwatch's series nothing at all. %[1]s is the rule
// file, %[2]s the query.
const absentQueryTest = `rule_files: [%[1]s]
evaluation_interval: 1m
tests:
  - name: a job exporting now answers 0, a silent one its count
    interval: 1m
    input_series:
      - series: 'lockwatch_election_term{job="scheduler", instance="127.0.0.1:9464", election="scheduler"}'
        values: '7x40'
      - series: 'lockwatch_permits_held{job="exports", instance="127.0.0.1:9465", semaphore="exports"}'
        values: '1x10'
      - series: 'lockwatch_lease_active{job="exports", instance="127.0.0.1:9465", lock_name="export"}'
        values: '0x10'
    promql_expr_test:
      - expr: |
%[2]s
        eval_time: 30m
        exp_samples:
          - {labels: '{job="scheduler"}', value: 0}
          - {labels: '{job="exports"}', value: 2}
  - name: no lockwatch series at all answers nothing
    interval: 1m
    input_series:
      - series: 'up{job="billing", instance="127.0.0.1:9466"}'
        values: '1x10 0x20'
    promql_expr_test:
      - expr: |
%[2]s
        eval_time: 30m
        exp_samples: []
`

// TestAbsentQueryAnswersEveryJob: the reason for the Grafana rule's
// no-data state Alerting holds. The query answers for every job lockwatch
// ran in, 0 where it exports now, so an empty answer is never health: it
// means the data source holds no lockwatch series for the selector.
func TestAbsentQueryAnswersEveryJob(t *testing.T) {
	query := grafanaQueries(t, read(t, alerts.GrafanaFile))["LockwatchMetricsAbsent"]
	require.NotEmpty(t, query)
	value, threshold := splitThreshold(t, ruleExpr(t, "LockwatchMetricsAbsent"))
	assert.Equal(t, value, query)
	assert.Equal(t, "0", threshold)

	rules, err := filepath.Abs(alerts.RulesFile)
	require.NoError(t, err)
	indented := "          " + strings.ReplaceAll(query, "\n", "\n          ")
	path := filepath.Join(t.TempDir(), "absent_test.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, absentQueryTest, rules, indented), 0o644))
	assert.Contains(t, promtool(t, "test", "rules", path), "SUCCESS")
}

// ruleExpr is the expression of the committed alert of that name.
func ruleExpr(t *testing.T, name string) string {
	t.Helper()
	for _, r := range decodeRules(t, read(t, alerts.RulesFile)) {
		if r.Alert == name {
			return r.Expr
		}
	}
	t.Fatalf("no rule %s", name)
	return ""
}

package alerts_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/promtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/alerts"
)

// refusalsTest is a promtool test file, beside the catalogue's one-case-per-
// alert tests, on data no single alert's case holds: a steady stream of
// forged and foreign tokens (one a second each, 20 times the stale-write
// spike's threshold together) at a resource whose stale-write counter
// stands at zero, as the telemetry records it. The stale-write alerts stay
// silent at every evaluation past their for durations; the only alerts at
// all, pending or firing, are LockwatchFenceTokensRefused's two instances,
// so the data is a refusal stream the rules do see. %s is the rule file.
const refusalsTest = `rule_files: [%s]
evaluation_interval: 1m
tests:
  - name: a stream of forged and foreign tokens pages nobody for stale writes
    interval: 1m
    input_series:
      - series: 'lockwatch_fence_checks_total{job="ledger-api", instance="10.0.0.7:9464", resource="ledger", result="forged"}'
        values: '0+60x40'
      - series: 'lockwatch_fence_checks_total{job="ledger-api", instance="10.0.0.7:9464", resource="ledger", result="foreign"}'
        values: '0+60x40'
      - series: 'lockwatch_fence_checks_total{job="ledger-api", instance="10.0.0.7:9464", resource="ledger", result="accepted"}'
        values: '0+600x40'
      - series: 'lockwatch_fence_rejections_total{job="ledger-api", instance="10.0.0.7:9464", resource="ledger"}'
        values: '0x40'
    alert_rule_test:
      - {eval_time: 3m, alertname: LockwatchStaleWriteSpike, exp_alerts: []}
      - {eval_time: 10m, alertname: LockwatchStaleWriteSpike, exp_alerts: []}
      - {eval_time: 30m, alertname: LockwatchStaleWriteSpike, exp_alerts: []}
      - {eval_time: 20m, alertname: LockwatchFenceRejections, exp_alerts: []}
      - {eval_time: 30m, alertname: LockwatchFenceRejections, exp_alerts: []}
      - {eval_time: 30m, alertname: LockwatchStaleWrite, exp_alerts: []}
    promql_expr_test:
      - expr: ALERTS
        eval_time: 30m
        exp_samples:
          - labels: 'ALERTS{alertname="LockwatchFenceTokensRefused", alertstate="firing", job="ledger-api", resource="ledger", result="forged", severity="warning"}'
            value: 1
          - labels: 'ALERTS{alertname="LockwatchFenceTokensRefused", alertstate="firing", job="ledger-api", resource="ledger", result="foreign", severity="warning"}'
            value: 1
`

// TestStaleWriteAlertsIgnoreTokenRefusals: token refusals are not stale
// writes, so the stale-write alerts (the page among them) do not fire for a
// misrouted client or a forger; the refusal alert does. The same file
// against rules whose stale-write alerts count every check that was not
// accepted fails, the spike firing: the data would page if refusals were
// counted as rejections.
func TestStaleWriteAlertsIgnoreTokenRefusals(t *testing.T) {
	rules, err := filepath.Abs(alerts.RulesFile)
	require.NoError(t, err)
	out := promtool(t, "test", "rules", writeRefusalsTest(t, rules))
	assert.Contains(t, out, "SUCCESS")

	committed := string(read(t, alerts.RulesFile))
	counted := strings.ReplaceAll(committed, obs.PromFenceRejections+"{", obs.PromFenceChecks+`{result!="accepted", `)
	require.NotEqual(t, committed, counted)
	mutant := filepath.Join(t.TempDir(), "counted.rules.yaml")
	require.NoError(t, os.WriteFile(mutant, []byte(counted), 0o644))
	out, err = promtoolOutput(t, "test", "rules", writeRefusalsTest(t, mutant))
	require.Error(t, err, "the refusals would page if counted as stale writes, and the test must say so:\n%s", out)
	assert.Contains(t, out, "alertname: LockwatchStaleWriteSpike")
	assert.Contains(t, out, "alertname: LockwatchFenceRejections")
	assert.Contains(t, out, "alertname: LockwatchStaleWrite,")
}

// writeRefusalsTest writes refusalsTest for the rule file at rules and
// returns its path.
func writeRefusalsTest(t *testing.T, rules string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "refusals_test.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(refusalsTest, "%s", rules, 1)), 0o644))
	return path
}

// promtoolOutput runs promtool and returns its combined output and its
// error, for a run that is expected to fail.
func promtoolOutput(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, promtest.Promtool(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestRefusalAlertCoversEveryRefusal: LockwatchFenceTokensRefused counts
// exactly the fence results that are neither a check (accepted, rejected)
// nor a late write: a refusal result added to telemetry is watched, or
// this fails.
func TestRefusalAlertCoversEveryRefusal(t *testing.T) {
	var want []string
	for _, r := range obs.FenceResults {
		if !slices.Contains([]obs.FenceResult{obs.FenceAccepted, obs.FenceRejected, obs.FenceLate}, r) {
			want = append(want, string(r))
		}
	}
	require.NotEmpty(t, want)
	matcher := regexp.MustCompile(`result=~"([^"]*)"`)
	for _, r := range decodeRules(t, read(t, alerts.RulesFile)) {
		if r.Alert != "LockwatchFenceTokensRefused" {
			continue
		}
		m := matcher.FindStringSubmatch(r.Expr)
		require.NotNil(t, m, r.Expr)
		assert.Equal(t, want, strings.Split(m[1], "|"), "in telemetry's order")
		assert.Contains(t, r.Expr, obs.PromFenceChecks+"{")
		return
	}
	t.Fatal("no rule LockwatchFenceTokensRefused")
}

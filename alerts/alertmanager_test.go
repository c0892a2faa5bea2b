package alerts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockwatch/lockwatch/alerts"
)

// TestAmtoolCheckConfig: the example Alertmanager configuration is valid.
func TestAmtoolCheckConfig(t *testing.T) {
	out := amtool(t, "check-config", alerts.AlertmanagerFile)
	assert.Contains(t, out, "SUCCESS")
}

// TestAlertmanagerRouting: every alert reaches the receiver its severity
// calls for (critical pages, warning opens a ticket), and alerts that are
// not lockwatch's do not reach either.
func TestAlertmanagerRouting(t *testing.T) {
	receiver := map[string]string{"critical": "lockwatch-pager", "warning": "lockwatch-ticket"}
	for _, r := range decodeRules(t, read(t, alerts.RulesFile)) {
		severity := r.Labels["severity"]
		out := amtool(t, "config", "routes", "test", "--config.file="+alerts.AlertmanagerFile,
			"--verify.receivers="+receiver[severity],
			"alertname="+r.Alert, "severity="+severity, "job=lockwatch-demo")
		assert.Equal(t, receiver[severity], strings.TrimSpace(out), r.Alert)
	}
	out := amtool(t, "config", "routes", "test", "--config.file="+alerts.AlertmanagerFile,
		"--verify.receivers=default", "alertname=KubePodCrashLooping", "severity=critical")
	assert.Equal(t, "default", strings.TrimSpace(out))
}

// TestStaleWriteSpikeInhibitsTheTickets: while a resource pages for a
// stale-write spike, the example holds back the two stale-write tickets of
// the same job and resource (RUNBOOK.md), and nothing else.
func TestStaleWriteSpikeInhibitsTheTickets(t *testing.T) {
	var cfg struct {
		InhibitRules []struct {
			SourceMatchers []string `yaml:"source_matchers"`
			TargetMatchers []string `yaml:"target_matchers"`
			Equal          []string `yaml:"equal"`
		} `yaml:"inhibit_rules"`
	}
	require.NoError(t, yaml.Unmarshal(read(t, alerts.AlertmanagerFile), &cfg))
	require.Len(t, cfg.InhibitRules, 1)
	r := cfg.InhibitRules[0]
	assert.Equal(t, []string{`alertname="LockwatchStaleWriteSpike"`}, r.SourceMatchers)
	assert.Equal(t, []string{`alertname=~"LockwatchFenceRejections|LockwatchStaleWrite"`}, r.TargetMatchers)
	assert.Equal(t, []string{"job", "resource"}, r.Equal)
}

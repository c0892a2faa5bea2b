package alerts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

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

package alerts_test

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/promtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/alerts"
)

// promtool runs the real promtool and fails with its output.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, promtest.Promtool(t), args...)
}

// amtool runs the real amtool and fails with its output.
func amtool(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, promtest.Amtool(t), args...)
}

// run runs a tool and returns its standard output; a failure shows both
// outputs.
func run(t *testing.T, tool string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "%s %v:\n%s%s", tool, args, stdout.String(), stderr.String())
	return stdout.String()
}

// TestPromtoolCheckRules: the committed rule file is valid.
func TestPromtoolCheckRules(t *testing.T) {
	out := promtool(t, "check", "rules", alerts.RulesFile)
	assert.Contains(t, out, "SUCCESS")
}

// TestPromtoolTestRules: every alert fires on its firing case with exactly
// the expected labels and annotations, and stays silent on healthy data.
func TestPromtoolTestRules(t *testing.T) {
	out := promtool(t, "test", "rules", alerts.TestsFile)
	assert.Contains(t, out, "SUCCESS")
}

package kubernetes_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/alerts"
	"github.com/lockwatch/lockwatch/internal/testenv/promtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockwatch/lockwatch/kubernetes"
)

// The committed PrometheusRule decodes strictly into the CRD's fields, with
// the right type, name, namespace and labels, and every rule is an alert or
// a recording rule with an expression.
func TestPrometheusRuleFitsTheCRD(t *testing.T) {
	pr := decodeOne[crdPrometheusRule](t, read(t, kubernetes.PrometheusRuleFile))
	assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	assert.Equal(t, "PrometheusRule", pr.Kind)
	assert.Equal(t, objectMeta{
		Name:      "lockwatch",
		Namespace: "monitoring",
		Labels:    map[string]string{"app.kubernetes.io/name": "lockwatch", "app.kubernetes.io/part-of": "lockwatch"},
	}, pr.Metadata)
	require.NotEmpty(t, pr.Spec.Groups)
	names := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		assert.False(t, names[g.Name], "group %s twice: the CRD's groups are a map keyed by name", g.Name)
		names[g.Name] = true
		require.NotEmpty(t, g.Rules, g.Name)
		for _, r := range g.Rules {
			assert.NotEqual(t, (r.Alert == ""), (r.Record == ""), "%s: exactly one of alert and record", g.Name)
			assert.NotEmpty(t, r.Expr, "%s %s%s", g.Name, r.Alert, r.Record)
		}
	}
}

// spec.groups are the groups of alerts' rule file, every field included,
// for the default job selector and another one; the namespace and labels
// of the Config reach the metadata.
func TestPrometheusRuleGroupsAreTheAlertsGroups(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  kubernetes.Config
	}{
		{"defaults", kubernetes.Config{}},
		{"payments in prod", kubernetes.Config{Namespace: "prod", JobSelector: `job="payments"`, Labels: map[string]string{"release": "kube-prometheus-stack"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := alerts.Generate(alerts.Config{JobSelector: tc.cfg.JobSelector})
			require.NoError(t, err)
			want := generic(t, rules[alerts.RulesFile])["groups"]
			require.NotEmpty(t, want)

			b := generate(t, tc.cfg)[kubernetes.PrometheusRuleFile]
			spec, ok := generic(t, b)["spec"].(map[string]any)
			require.True(t, ok)
			assert.Equal(t, want, spec["groups"])

			pr := decodeOne[crdPrometheusRule](t, b)
			wantNS := tc.cfg.Namespace
			if wantNS == "" {
				wantNS = kubernetes.DefaultNamespace
			}
			assert.Equal(t, wantNS, pr.Metadata.Namespace)
			for k, v := range tc.cfg.Labels {
				assert.Equal(t, v, pr.Metadata.Labels[k])
			}
		})
	}
}

var selectorRE = regexp.MustCompile(`\{[^}]*\}`)

// A job selector and a namespace given to Generate reach every selector of
// every expression and the metadata.
func TestJobSelectorAndNamespaceFlowThrough(t *testing.T) {
	b := generate(t, kubernetes.Config{Namespace: "prod", JobSelector: `job="payments"`})[kubernetes.PrometheusRuleFile]
	pr := decodeOne[crdPrometheusRule](t, b)
	assert.Equal(t, "prod", pr.Metadata.Namespace)
	n := 0
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			assert.Contains(t, r.Expr, `job="payments"`, r.Alert)
			assert.NotContains(t, r.Expr, alerts.DefaultJobSelector, r.Alert)
			for _, sel := range selectorRE.FindAllString(r.Expr, -1) {
				assert.Contains(t, sel, `job="payments"`, "%s: selector %s", r.Alert, sel)
				n++
			}
		}
	}
	assert.Positive(t, n)
}

// The rules inside the PrometheusRule, for the defaults and another job,
// pass promtool check rules: what the operator hands Prometheus loads.
func TestPromtoolCheckRules(t *testing.T) {
	promtool := promtest.Promtool(t)
	for name, cfg := range map[string]kubernetes.Config{
		"committed": {},
		"payments":  {Namespace: "prod", JobSelector: `job="payments", namespace="billing"`},
	} {
		t.Run(name, func(t *testing.T) {
			b := read(t, kubernetes.PrometheusRuleFile)
			if name != "committed" {
				b = generate(t, cfg)[kubernetes.PrometheusRuleFile]
			}
			spec, ok := generic(t, b)["spec"].(map[string]any)
			require.True(t, ok)
			ruleFile, err := yaml.Marshal(map[string]any{"groups": spec["groups"]})
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "rules.yaml")
			require.NoError(t, os.WriteFile(path, ruleFile, 0o644))

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, promtool, "check", "rules", path)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "promtool check rules:\n%s%s", stdout.String(), stderr.String())
			assert.Contains(t, stdout.String(), "SUCCESS")
		})
	}
}

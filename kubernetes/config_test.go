package kubernetes_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/kubernetes"
)

// A Config the API server (or promtool) would reject fails Generate with an
// error saying what is wrong.
func TestGenerateRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  kubernetes.Config
		want string
	}{
		{"blank namespace", kubernetes.Config{Namespace: " "}, "not a valid namespace name"},
		{"upper case", kubernetes.Config{Namespace: "Prod"}, `Namespace "Prod" is not a valid namespace name`},
		{"underscore", kubernetes.Config{Namespace: "my_ns"}, "DNS-1123 label"},
		{"leading dash", kubernetes.Config{Namespace: "-prod"}, "DNS-1123 label"},
		{"trailing dash", kubernetes.Config{Namespace: "prod-"}, "DNS-1123 label"},
		{"dot", kubernetes.Config{Namespace: "prod.eu"}, "DNS-1123 label"},
		{"too long", kubernetes.Config{Namespace: strings.Repeat("a", 64)}, "at most 63"},
		{"job selector with braces", kubernetes.Config{JobSelector: `{job="x"}`}, "JobSelector"},
		{"label overriding the sidecar's", kubernetes.Config{Labels: map[string]string{"grafana_dashboard": "0"}}, "must not set grafana_dashboard"},
		{"label key", kubernetes.Config{Labels: map[string]string{"bad key": "x"}}, `label key "bad key"`},
		{"label prefix", kubernetes.Config{Labels: map[string]string{"Example.com/x": "y"}}, "DNS subdomain"},
		{"label value", kubernetes.Config{Labels: map[string]string{"release": "kube prometheus"}}, `value "kube prometheus"`},
		{"label value too long", kubernetes.Config{Labels: map[string]string{"release": strings.Repeat("a", 64)}}, "at most 63"},
		{"folder on two lines", kubernetes.Config{Folder: "a\nb"}, "one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := kubernetes.Generate(tc.cfg)
			require.Error(t, err)
			assert.Nil(t, files)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "kubernetes: "), err.Error())
		})
	}
}

// Names the API server accepts are accepted.
func TestGenerateAcceptsGoodConfig(t *testing.T) {
	for _, cfg := range []kubernetes.Config{
		{Namespace: "a"},
		{Namespace: "prod-2"},
		{Namespace: strings.Repeat("a", 63)},
		{Labels: map[string]string{"release": "kube-prometheus-stack", "example.com/team": "", "prometheus": "k8s"}},
		{Labels: map[string]string{"app.kubernetes.io/part-of": "payments"}},
	} {
		_, err := kubernetes.Generate(cfg)
		assert.NoError(t, err, "%+v", cfg)
	}
}

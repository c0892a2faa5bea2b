package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/kubernetes"
)

// The flags reach the files, written into a directory made for them.
func TestRunWritesTheFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "deploy")
	require.NoError(t, run([]string{"-namespace", "prod", "-job-selector", `job="payments"`, "-label", "release=kube-prometheus-stack", "-out", out}, io.Discard))

	want, err := kubernetes.Generate(kubernetes.Config{Namespace: "prod", JobSelector: `job="payments"`, Labels: map[string]string{"release": "kube-prometheus-stack"}})
	require.NoError(t, err)
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		assert.Equal(t, string(data), string(got), name)
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, len(want))
}

// The default flags give the committed files.
func TestRunDefaultsAreTheCommittedFiles(t *testing.T) {
	out := t.TempDir()
	require.NoError(t, run([]string{"-out", out}, io.Discard))
	for _, name := range []string{kubernetes.PrometheusRuleFile, kubernetes.DashboardsFile} {
		got, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		committed, err := os.ReadFile(filepath.Join("..", name))
		require.NoError(t, err)
		assert.Equal(t, string(committed), string(got), "%s: run go generate ./kubernetes/...", name)
	}
}

// Bad flags fail with an error naming the problem, and write nothing.
func TestRunRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-namespace", ""}, "-namespace must not be empty"},
		{[]string{"-namespace", "Prod"}, `Namespace "Prod" is not a valid namespace name`},
		{[]string{"-namespace", "prod_eu"}, "DNS-1123 label"},
		{[]string{"-job-selector", ""}, "-job-selector must not be empty"},
		{[]string{"-job-selector", `{job="x"}`}, "JobSelector"},
		{[]string{"-label", "release"}, "not KEY=VALUE"},
		{[]string{"-label", "a=1", "-label", "a=2"}, "given twice"},
		{[]string{"-label", "grafana_dashboard=0"}, "must not set grafana_dashboard"},
		{[]string{"-folder", ""}, "-folder must not be empty"},
		{[]string{"-out", ""}, "-out must not be empty"},
		{[]string{"prod"}, "unexpected arguments"},
		{[]string{"-nope"}, "flag provided but not defined"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"-out", out}, tc.args...)
			err := run(args, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			assert.Empty(t, entries)
		})
	}
}

package kubernetes_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockwatch/lockwatch/kubernetes"
)

// The objects as the API server reads them, decoded independently of the
// generator's types. The PrometheusRule mirrors every field of
// prometheus-operator's pkg/apis/monitoring/v1/prometheusrule_types.go
// (spec, groups, rules); metadata has the ObjectMeta fields lockwatch may
// set. Decoding is strict, so a field the CRD lacks fails the test.
type (
	objectMeta struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	crdPrometheusRule struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   objectMeta `yaml:"metadata"`
		Spec       struct {
			Groups []crdRuleGroup `yaml:"groups"`
		} `yaml:"spec"`
	}
	crdRuleGroup struct {
		Name                    string            `yaml:"name"`
		Labels                  map[string]string `yaml:"labels"`
		Interval                string            `yaml:"interval"`
		QueryOffset             string            `yaml:"query_offset"`
		Rules                   []crdRule         `yaml:"rules"`
		PartialResponseStrategy string            `yaml:"partial_response_strategy"`
		Limit                   *int              `yaml:"limit"`
	}
	crdRule struct {
		Record        string            `yaml:"record"`
		Alert         string            `yaml:"alert"`
		Expr          string            `yaml:"expr"`
		For           string            `yaml:"for"`
		KeepFiringFor string            `yaml:"keep_firing_for"`
		Labels        map[string]string `yaml:"labels"`
		Annotations   map[string]string `yaml:"annotations"`
	}
	configMap struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   objectMeta        `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
	}
)

// read returns a file relative to this directory.
func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}

// generate returns the output for cfg.
func generate(t *testing.T, cfg kubernetes.Config) map[string][]byte {
	t.Helper()
	files, err := kubernetes.Generate(cfg)
	require.NoError(t, err)
	return files
}

// decodeAll decodes every YAML document of b strictly into a T.
func decodeAll[T any](t *testing.T, b []byte) []T {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var out []T
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		out = append(out, v)
	}
	require.NotEmpty(t, out)
	return out
}

// decodeOne decodes the single YAML document of b strictly into a T.
func decodeOne[T any](t *testing.T, b []byte) T {
	t.Helper()
	docs := decodeAll[T](t, b)
	require.Len(t, docs, 1)
	return docs[0]
}

// generic decodes one YAML document as maps, slices and scalars: what
// kubectl sees, every field included.
func generic(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, yaml.Unmarshal(b, &v))
	return v
}

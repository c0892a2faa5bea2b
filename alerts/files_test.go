package alerts_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockwatch/lockwatch/alerts"
)

// The outputs as a user's tools read them, decoded independently of the
// generator's own types.
type (
	ruleFile struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	rule struct {
		Record      string            `yaml:"record"`
		Alert       string            `yaml:"alert"`
		Expr        string            `yaml:"expr"`
		For         string            `yaml:"for"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	testFile struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			Name           string `yaml:"name"`
			AlertRuleTests []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []struct {
					ExpLabels      map[string]string `yaml:"exp_labels"`
					ExpAnnotations map[string]string `yaml:"exp_annotations"`
				} `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
			ExprTests []struct {
				Expr       string `yaml:"expr"`
				ExpSamples []struct {
					Labels string  `yaml:"labels"`
					Value  float64 `yaml:"value"`
				} `yaml:"exp_samples"`
			} `yaml:"promql_expr_test"`
		} `yaml:"tests"`
	}
)

// read returns a committed file of this directory.
func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}

// decodeRules decodes a rule file strictly (an unknown key is an error) and
// returns its alerting rules.
func decodeRules(t *testing.T, b []byte) []rule {
	t.Helper()
	var alerting []rule
	for _, r := range decodeAllRules(t, b) {
		if r.Record == "" {
			alerting = append(alerting, r)
		}
	}
	require.NotEmpty(t, alerting)
	return alerting
}

// decodeRecordings returns the recording rules of a rule file.
func decodeRecordings(t *testing.T, b []byte) []rule {
	t.Helper()
	var recording []rule
	for _, r := range decodeAllRules(t, b) {
		if r.Record != "" {
			recording = append(recording, r)
		}
	}
	return recording
}

// decodeAllRules decodes a rule file strictly: an unknown key is an error.
func decodeAllRules(t *testing.T, b []byte) []rule {
	t.Helper()
	var f ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&f))
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	require.NotEmpty(t, rules)
	return rules
}

// groupOf maps each alert to its group's name.
func groupOf(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var f ruleFile
	require.NoError(t, yaml.Unmarshal(b, &f))
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = g.Name
		}
	}
	return out
}

// threshold splits an alert expression into the measured value and the
// number it is compared with.
var thresholdRE = regexp.MustCompile(`(?s)^(.*?)\s*>\s*([0-9.e+-]+)$`)

func splitThreshold(t *testing.T, expr string) (value, threshold string) {
	t.Helper()
	m := thresholdRE.FindStringSubmatch(expr)
	require.NotNil(t, m, "expression does not end in '> threshold': %s", expr)
	return m[1], m[2]
}

// generate returns the output for cfg.
func generate(t *testing.T, cfg alerts.Config) map[string][]byte {
	t.Helper()
	files, err := alerts.Generate(cfg)
	require.NoError(t, err)
	return files
}

// unmarshalJSONArray splits a JSON array into its elements.
func unmarshalJSONArray(t *testing.T, b []byte) []json.RawMessage {
	t.Helper()
	var raw []json.RawMessage
	require.NoError(t, json.Unmarshal(b, &raw))
	return raw
}

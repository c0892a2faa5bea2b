package kubernetes

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The PrometheusRule, with the field names of prometheus-operator's
// pkg/apis/monitoring/v1/prometheusrule_types.go. Groups and rules have the
// fields that both a Prometheus rule file and the CRD know (the CRD's
// partial_response_strategy is Thanos Ruler's only), so that decoding the
// alerts' rule file strictly into them fails on anything the CRD would
// not take.
type (
	prometheusRule struct {
		APIVersion string             `yaml:"apiVersion"`
		Kind       string             `yaml:"kind"`
		Metadata   objectMeta         `yaml:"metadata"`
		Spec       prometheusRuleSpec `yaml:"spec"`
	}
	prometheusRuleSpec struct {
		Groups []ruleGroup `yaml:"groups"`
	}
	ruleGroup struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels,omitempty"`
		Interval    string            `yaml:"interval,omitempty"`
		QueryOffset string            `yaml:"query_offset,omitempty"`
		Limit       *int              `yaml:"limit,omitempty"`
		Rules       []rule            `yaml:"rules"`
	}
	rule struct {
		Record        string            `yaml:"record,omitempty"`
		Alert         string            `yaml:"alert,omitempty"`
		Expr          string            `yaml:"expr"`
		For           string            `yaml:"for,omitempty"`
		KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
		Labels        map[string]string `yaml:"labels,omitempty"`
		Annotations   map[string]string `yaml:"annotations,omitempty"`
	}
)

// The PrometheusRule's API group, version and kind.
const (
	PrometheusRuleAPIVersion = "monitoring.coreos.com/v1"
	PrometheusRuleKind       = "PrometheusRule"
)

// prometheusRuleFor wraps the groups of a Prometheus rule file.
func prometheusRuleFor(cfg Config, ruleFile []byte) (prometheusRule, error) {
	groups, err := ruleGroups(ruleFile)
	if err != nil {
		return prometheusRule{}, err
	}
	return prometheusRule{
		APIVersion: PrometheusRuleAPIVersion,
		Kind:       PrometheusRuleKind,
		Metadata:   meta(cfg, Name, nil),
		Spec:       prometheusRuleSpec{Groups: groups},
	}, nil
}

// ruleGroups decodes the groups of a Prometheus rule file, rejecting
// fields the PrometheusRule CRD does not have.
func ruleGroups(ruleFile []byte) ([]ruleGroup, error) {
	var file struct {
		Groups []ruleGroup `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(ruleFile))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("kubernetes: the alerts' rule file does not fit a PrometheusRule: %w", err)
	}
	if len(file.Groups) == 0 {
		return nil, errors.New("kubernetes: the alerts' rule file has no groups")
	}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if (r.Alert == "") == (r.Record == "") {
				return nil, fmt.Errorf("kubernetes: group %s: a rule needs exactly one of alert and record (alert %q, record %q)", g.Name, r.Alert, r.Record)
			}
		}
	}
	return file.Groups, nil
}

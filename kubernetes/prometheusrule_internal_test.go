package kubernetes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Recording rules and every group field Prometheus and the CRD share pass
// through; a field the CRD does not have, or a rule that is neither an
// alert nor a recording rule, is an error rather than a silent drop.
func TestRuleGroups(t *testing.T) {
	groups, err := ruleGroups([]byte(`groups:
  - name: g
    interval: 1m
    query_offset: 30s
    limit: 0
    labels: {team: locks}
    rules:
      - record: job:lockwatch_lease_acquires:rate5m
        expr: sum by (job) (rate(lockwatch_lease_acquires_total[5m]))
        labels: {tier: "1"}
      - alert: A
        expr: up == 0
        for: 5m
        keep_firing_for: 10m
`))
	require.NoError(t, err)
	require.Len(t, groups, 1)
	g := groups[0]
	assert.Equal(t, "1m", g.Interval)
	assert.Equal(t, "30s", g.QueryOffset)
	require.NotNil(t, g.Limit)
	assert.Equal(t, 0, *g.Limit)
	assert.Equal(t, "job:lockwatch_lease_acquires:rate5m", g.Rules[0].Record)
	assert.Equal(t, "10m", g.Rules[1].KeepFiringFor)

	for name, file := range map[string]string{
		"unknown rule field":  "groups: [{name: g, rules: [{alert: A, expr: up, severity: page}]}]",
		"unknown group field": "groups: [{name: g, evaluation: 1m, rules: [{alert: A, expr: up}]}]",
		"neither":             "groups: [{name: g, rules: [{expr: up}]}]",
		"both":                "groups: [{name: g, rules: [{alert: A, record: r, expr: up}]}]",
		"no groups":           "groups: []",
	} {
		_, err := ruleGroups([]byte(file))
		assert.Error(t, err, name)
	}
}

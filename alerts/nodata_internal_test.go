package alerts

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGrafanaNoDataStateIsTheCatalogues: every Grafana-managed rule, in the
// committed file and in a fresh generation, has the no-data state its
// catalogue entry chose, and every entry gives its reason.
func TestGrafanaNoDataStateIsTheCatalogues(t *testing.T) {
	q := promql{jobSelector: DefaultJobSelector}
	want := map[string]alerting.RuleNoDataState{}
	for _, a := range slices.Concat(catalogue(q), elections(q), permits(q), absent(q)) {
		assert.NotEmpty(t, a.NoData.Why, a.Name)
		want[a.Name] = a.NoData.State
	}
	// RUNBOOK.md#lockwatchmetricsabsent: Alerting for the absent rule,
	// whose empty answer means the rules watch nothing; OK for every other,
	// whose empty answer means nothing was in use.
	for name, state := range want {
		if name == nameMetricsAbsent {
			assert.Equal(t, alerting.RuleNoDataStateAlerting, state, name)
		} else {
			assert.Equal(t, alerting.RuleNoDataStateOK, state, name)
		}
	}

	files, err := Generate(Config{})
	require.NoError(t, err)
	var groups []struct {
		Rules []struct {
			Title       string `json:"title"`
			NoDataState string `json:"noDataState"`
		} `json:"rules"`
	}
	require.NoError(t, json.Unmarshal(files[GrafanaFile], &groups))
	got := map[string]alerting.RuleNoDataState{}
	for _, g := range groups {
		for _, r := range g.Rules {
			got[r.Title] = alerting.RuleNoDataState(r.NoDataState)
		}
	}
	assert.Equal(t, want, got)
}

// TestCheckRequiresNoDataChoice: an alert without a no-data state, or
// without the reason for it, is refused.
func TestCheckRequiresNoDataChoice(t *testing.T) {
	a := absent(promql{jobSelector: DefaultJobSelector})[0]
	require.NoError(t, check([]alert{a}))
	for name, nd := range map[string]noData{
		"no state":  {Why: a.NoData.Why},
		"no reason": {State: alerting.RuleNoDataStateOK},
		"unknown":   {State: "Pending", Why: a.NoData.Why},
	} {
		b := a
		b.NoData = nd
		assert.Error(t, check([]alert{b}), name)
	}
}

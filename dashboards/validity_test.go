package dashboards_test

import (
	"encoding/json"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each file decodes with the SDK's strict decoder (loadCommitted fails on
// unknown or missing fields and wrong types), and a round trip through the
// SDK's types gives the same JSON: a field the types do not know would be
// dropped, even where the strict decoder is lenient (fieldConfig).
func TestStrictlyValid(t *testing.T) {
	for _, c := range loadCommitted(t) {
		t.Run(c.file, func(t *testing.T) {
			again, err := json.Marshal(c.dash)
			require.NoError(t, err)
			assert.JSONEq(t, string(c.raw), string(again), "%s loses or changes fields in a round trip through the SDK's types", c.file)
		})
	}
}

// The strict decoder (and strictDecode around it) fails where it should: an
// unknown field at the top, in a panel, in a query, or a panel type the SDK
// does not know.
func TestStrictDecodeRejects(t *testing.T) {
	c := loadCommitted(t)[0]
	mutations := map[string]func(d map[string]any){
		"unknown dashboard field": func(d map[string]any) { d["__inputs"] = []any{} },
		"unknown panel field":     func(d map[string]any) { firstPanel(d, "stat")["bogus"] = 1 },
		"unknown query field":     func(d map[string]any) { firstTarget(d)["bogus"] = 1 },
		"unknown options field":   func(d map[string]any) { firstPanel(d, "stat")["options"].(map[string]any)["bogus"] = 1 },
		"wrong type":              func(d map[string]any) { d["schemaVersion"] = "42" },
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			var d map[string]any
			require.NoError(t, json.Unmarshal(c.raw, &d))
			mutate(d)
			raw, err := json.Marshal(d)
			require.NoError(t, err)
			var decoded dashboard.Dashboard
			assert.Error(t, strictDecode(raw, &decoded))
		})
	}
}

func firstPanel(d map[string]any, typ string) map[string]any {
	for _, p := range d["panels"].([]any) {
		if p := p.(map[string]any); p["type"] == typ {
			return p
		}
	}
	panic("no " + typ + " panel")
}

func firstTarget(d map[string]any) map[string]any {
	return firstPanel(d, "timeseries")["targets"].([]any)[0].(map[string]any)
}

package telemetry_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// TestDocListsEverySeries: the package doc's list of Prometheus series
// names every instrument of the catalogue, with its labels.
func TestDocListsEverySeries(t *testing.T) {
	raw, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	doc := strings.Join(strings.Fields(strings.ReplaceAll(string(raw), "//", "")), " ")
	for _, m := range obs.Metrics {
		assert.Contains(t, doc, "- "+m.Prom+"{"+strings.Join(m.Labels, ", ")+"}:", m.Name)
	}
	assert.Equal(t, len(obs.Metrics), strings.Count(doc, " - lockwatch_"), "the list holds nothing else")
	for _, values := range [][]string{strs(obs.AcquireResults), strs(obs.ResolutionResults), strs(obs.RenewalResults),
		strs(obs.CommitResults), strs(obs.ReleaseResults), strs(obs.FenceResults)} {
		assert.Contains(t, doc, strings.Join(values, ", "), "a closed set's values, in its order")
	}
}

func strs[V ~string](vs []V) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

package dashboards_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/dashboards"
)

const regenerate = "the generator is the source of truth: run go generate ./dashboards/... and commit the JSON"

// The committed JSON is exactly what the generator makes now, and there is
// no JSON file here the generator does not make (a renamed dashboard leaves
// none behind).
func TestCommittedFilesAreFresh(t *testing.T) {
	files, err := dashboards.Generate()
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for name, want := range files {
		got, err := os.ReadFile(name)
		require.NoError(t, err, "%s is missing; %s", name, regenerate)
		assert.Equal(t, string(want), string(got), "%s differs from a fresh generation; %s", name, regenerate)
	}
	onDisk, err := filepath.Glob("*.json")
	require.NoError(t, err)
	for _, name := range onDisk {
		assert.Contains(t, files, name, "%s is not generated any more: delete it (%s)", name, regenerate)
	}
}

// Two generations give the same bytes: nothing depends on map order or time.
func TestGenerateIsDeterministic(t *testing.T) {
	first, err := dashboards.Generate()
	require.NoError(t, err)
	second, err := dashboards.Generate()
	require.NoError(t, err)
	assert.Equal(t, first, second)
}

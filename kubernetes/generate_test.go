package kubernetes_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/kubernetes"
)

const regenerate = "the generators are the source of truth: run go generate ./kubernetes/... and commit the YAML"

// The committed files are exactly what Generate makes now with the default
// Config, and no YAML file here is left over from an earlier generator.
func TestCommittedFilesAreFresh(t *testing.T) {
	files := generate(t, kubernetes.Config{})
	require.Len(t, files, 2)
	for name, want := range files {
		got, err := os.ReadFile(name)
		require.NoError(t, err, "%s is missing; %s", name, regenerate)
		assert.Equal(t, string(want), string(got), "%s differs from a fresh generation; %s", name, regenerate)
	}
	onDisk, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	for _, name := range onDisk {
		assert.Contains(t, files, name, "%s is not generated any more: delete it (%s)", name, regenerate)
	}
}

// Two generations give the same bytes: nothing depends on map order.
func TestGenerateIsDeterministic(t *testing.T) {
	first, second := generate(t, kubernetes.Config{}), generate(t, kubernetes.Config{})
	assert.Equal(t, first, second)
}

// The zero Config and the defaults spelled out are the same configuration.
func TestZeroConfigIsTheDefaults(t *testing.T) {
	assert.Equal(t, generate(t, kubernetes.Config{}), generate(t, kubernetes.Config{
		Namespace:   kubernetes.DefaultNamespace,
		JobSelector: `job=~".+"`,
		Folder:      kubernetes.DefaultFolder,
		Labels:      map[string]string{"app.kubernetes.io/name": "lockwatch"},
	}))
}

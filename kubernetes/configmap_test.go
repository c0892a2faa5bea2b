package kubernetes_test

import (
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockwatch/lockwatch/dashboards"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockwatch/lockwatch/kubernetes"
)

// uids are the dashboards' UIDs by file.
var uids = map[string]string{
	"overview.json":    dashboards.OverviewUID,
	"lock-detail.json": dashboards.LockDetailUID,
}

// Each dashboard is in a ConfigMap of its own, labelled for the sidecar,
// under one .json key whose value is the committed dashboard byte for byte
// (and what dashboards.Generate makes), decoding as JSON with the
// dashboard's uid.
func TestDashboardConfigMaps(t *testing.T) {
	boards, err := dashboards.Generate()
	require.NoError(t, err)
	require.Len(t, boards, len(uids), "a dashboard was added or removed: update uids")

	cms := decodeAll[configMap](t, read(t, kubernetes.DashboardsFile))
	require.Len(t, cms, len(boards))
	seen := map[string]bool{}
	for _, cm := range cms {
		assert.Equal(t, "v1", cm.APIVersion)
		assert.Equal(t, "ConfigMap", cm.Kind)
		assert.Equal(t, "monitoring", cm.Metadata.Namespace)
		assert.True(t, strings.HasPrefix(cm.Metadata.Name, "lockwatch-dashboard-"), cm.Metadata.Name)
		assert.Equal(t, "1", cm.Metadata.Labels["grafana_dashboard"])
		assert.Equal(t, "lockwatch", cm.Metadata.Labels["app.kubernetes.io/name"])
		assert.Equal(t, map[string]string{"grafana_folder": "lockwatch"}, cm.Metadata.Annotations)
		require.Len(t, cm.Data, 1, cm.Metadata.Name)
		for key, value := range cm.Data {
			assert.True(t, strings.HasSuffix(key, ".json"), "%s: the sidecar loads only .json keys", key)
			assert.False(t, seen[key], "%s in two ConfigMaps", key)
			seen[key] = true
			assert.Equal(t, "lockwatch-dashboard-"+strings.TrimSuffix(key, ".json"), cm.Metadata.Name)

			committed := read(t, filepath.Join("..", "dashboards", key))
			assert.Equal(t, value, string(committed), "%s differs from dashboards/%s", cm.Metadata.Name, key)
			assert.Equal(t, value, string(boards[key]), "%s differs from dashboards.Generate", cm.Metadata.Name)

			var d struct {
				UID string `json:"uid"`
			}
			require.NoError(t, json.Unmarshal([]byte(value), &d), key)
			assert.Equal(t, uids[key], d.UID, key)
		}
	}
	assert.Len(t, seen, len(boards))
}

// The label's value is the YAML string "1", not the integer 1: the API
// server rejects a ConfigMap whose label value is a number.
func TestDashboardLabelIsAString(t *testing.T) {
	b := read(t, kubernetes.DashboardsFile)
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	n := 0
	for {
		var doc struct {
			Metadata struct {
				Labels map[string]any `yaml:"labels"`
			} `yaml:"metadata"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		n++
		assert.Equal(t, any("1"), doc.Metadata.Labels["grafana_dashboard"])
	}
	assert.Equal(t, len(uids), n)
}

// Every ConfigMap fits Kubernetes' 1 MiB limit, and (being applied with
// kubectl apply, which copies the whole object into the
// kubectl.kubernetes.io/last-applied-configuration annotation) the 256 KiB
// limit on an object's annotations too.
func TestDashboardConfigMapsFit(t *testing.T) {
	for _, cm := range decodeAll[configMap](t, read(t, kubernetes.DashboardsFile)) {
		size := 0
		for k, v := range cm.Data {
			size += len(k) + len(v)
		}
		assert.Less(t, size, kubernetes.MaxConfigMapBytes, cm.Metadata.Name)
		assert.Equal(t, 1<<20, kubernetes.MaxConfigMapBytes)

		obj, err := json.Marshal(cm)
		require.NoError(t, err)
		assert.Less(t, len(obj), 256<<10, "%s: too big for client-side kubectl apply; document kubectl apply --server-side", cm.Metadata.Name)
	}
}

// Another namespace, labels and folder reach every ConfigMap, and the
// sidecar's label stays.
func TestDashboardConfigMapsFollowTheConfig(t *testing.T) {
	b := generate(t, kubernetes.Config{Namespace: "prod", Folder: "Platform/locks", Labels: map[string]string{"team": "payments"}})[kubernetes.DashboardsFile]
	for _, cm := range decodeAll[configMap](t, b) {
		assert.Equal(t, "prod", cm.Metadata.Namespace)
		assert.Equal(t, "payments", cm.Metadata.Labels["team"])
		assert.Equal(t, "1", cm.Metadata.Labels["grafana_dashboard"])
		assert.Equal(t, "Platform/locks", cm.Metadata.Annotations["grafana_folder"])
	}
}

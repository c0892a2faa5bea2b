package kubernetes

import (
	"fmt"
	"strings"
)

// configMap is a core/v1 ConfigMap with text data.
type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

// MaxConfigMapBytes is the most data (keys and values) the API server
// accepts in one ConfigMap: 1 MiB.
const MaxConfigMapBytes = 1 << 20

// configMapsFor puts each dashboard in a ConfigMap of its own, so that one
// dashboard's growth cannot push another over the size limit, named after
// the file and keyed by it: the sidecar writes each data key as a file.
func configMapsFor(cfg Config, boards map[string][]byte) ([]configMap, error) {
	out := make([]configMap, 0, len(boards))
	for _, file := range sortedKeys(boards) {
		base, ok := strings.CutSuffix(file, ".json")
		if !ok {
			return nil, fmt.Errorf("kubernetes: dashboard %s: the sidecar loads only .json keys", file)
		}
		m := configMap{
			APIVersion: "v1",
			Kind:       "ConfigMap",
			Metadata:   meta(cfg, Name+"-dashboard-"+base, map[string]string{DashboardLabel: DashboardLabelValue}),
			Data:       map[string]string{file: string(boards[file])},
		}
		m.Metadata.Annotations = map[string]string{FolderAnnotation: cfg.Folder}
		if size := len(file) + len(boards[file]); size > MaxConfigMapBytes {
			return nil, fmt.Errorf("kubernetes: ConfigMap %s would hold %d bytes, over Kubernetes' limit of %d", m.Metadata.Name, size, MaxConfigMapBytes)
		}
		out = append(out, m)
	}
	return out, nil
}

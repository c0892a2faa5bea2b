package kubernetes

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/lockwatch/lockwatch/alerts"
)

// Defaults of Config.
const (
	// DefaultNamespace is where kube-prometheus-stack and Grafana's Helm
	// chart are most often installed.
	DefaultNamespace = "monitoring"
	// DefaultFolder is the Grafana folder the dashboards ask the sidecar to
	// file them in.
	DefaultFolder = "lockwatch"
)

// Labels and annotations the objects carry.
const (
	// DashboardLabel marks the ConfigMaps for the Grafana dashboard sidecar;
	// its value is DashboardLabelValue.
	DashboardLabel      = "grafana_dashboard"
	DashboardLabelValue = "1"
	// FolderAnnotation names the dashboards' Grafana folder, for a sidecar
	// configured with folderAnnotation: grafana_folder.
	FolderAnnotation = "grafana_folder"
)

// defaultLabels are on every object.
var defaultLabels = map[string]string{
	"app.kubernetes.io/name":    "lockwatch",
	"app.kubernetes.io/part-of": "lockwatch",
}

// Config says where the objects go and which series the rules watch. The
// zero value is the configuration of the committed files.
type Config struct {
	// Namespace of every object: a DNS-1123 label (lower-case letters,
	// digits and '-', at most 63). Default DefaultNamespace.
	Namespace string
	// JobSelector narrows every expression of the rules; it is
	// alerts.Config.JobSelector, e.g. `job="payments"`. Default
	// alerts.DefaultJobSelector.
	JobSelector string
	// Labels are added to the labels of every object, e.g. the one a
	// Prometheus object's ruleSelector matches. They may override
	// app.kubernetes.io/name and app.kubernetes.io/part-of (both lockwatch
	// by default) but not grafana_dashboard. Default none.
	Labels map[string]string
	// Folder is the value of the grafana_folder annotation of the dashboard
	// ConfigMaps. Default DefaultFolder.
	Folder string
}

// withDefaults fills in every default, in one place, and rejects what the
// Kubernetes API server would reject.
func (c Config) withDefaults() (Config, error) {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.JobSelector == "" {
		c.JobSelector = alerts.DefaultJobSelector
	}
	if c.Folder == "" {
		c.Folder = DefaultFolder
	}
	labels := maps.Clone(defaultLabels)
	maps.Copy(labels, c.Labels)
	c.Labels = labels

	if err := validNamespace(c.Namespace); err != nil {
		return c, err
	}
	if strings.ContainsAny(c.Folder, "\n\r") {
		return c, fmt.Errorf("kubernetes: Folder %q must be one line", c.Folder)
	}
	for k, v := range c.Labels {
		if k == DashboardLabel {
			return c, fmt.Errorf("kubernetes: Labels must not set %s: the dashboard ConfigMaps set it to %q", DashboardLabel, DashboardLabelValue)
		}
		if err := validLabel(k, v); err != nil {
			return c, err
		}
	}
	return c, nil
}

// dns1123Label is a namespace name as the API server validates it.
var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func validNamespace(ns string) error {
	if len(ns) > 63 || !dns1123Label.MatchString(ns) {
		return fmt.Errorf("kubernetes: Namespace %q is not a valid namespace name: it must be a DNS-1123 label, at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", ns)
	}
	return nil
}

// labelName is the name part of a label key, and a non-empty label value.
var (
	labelName     = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dns1123Domain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// validLabel checks a label as the API server does: a key of an optional
// DNS subdomain prefix and a name of at most 63 characters, a value empty
// or a name.
func validLabel(key, value string) error {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		prefix, name = "", key
	}
	switch {
	case hasPrefix && (len(prefix) > 253 || !dns1123Domain.MatchString(prefix)):
		return fmt.Errorf("kubernetes: label key %q: the prefix before '/' must be a DNS subdomain, e.g. example.com", key)
	case len(name) > 63 || !labelName.MatchString(name):
		return fmt.Errorf("kubernetes: label key %q: the name must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", key)
	case value != "" && (len(value) > 63 || !labelName.MatchString(value)):
		return fmt.Errorf("kubernetes: label %s: value %q must be empty or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", key, value)
	}
	return nil
}

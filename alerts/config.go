package alerts

import (
	"errors"
	"fmt"
	"maps"
	"strings"
)

// Defaults of Config.
const (
	// DefaultJobSelector selects every scrape job: the metric names are
	// lockwatch's own, so no other exporter's series can match them.
	DefaultJobSelector = `job=~".+"`
	// DefaultRunbookURL is RUNBOOK.md of this directory on GitHub.
	DefaultRunbookURL = "https://github.com/lockwatch/lockwatch/blob/main/alerts/RUNBOOK.md"
	// DefaultGrafanaDatasourceUID is a placeholder for the uid of the
	// Prometheus data source in Grafana, to substitute at import (README.md).
	DefaultGrafanaDatasourceUID = "${PROMETHEUS_DATASOURCE_UID}"
	// DefaultGrafanaFolderUID is a placeholder for the uid of the Grafana
	// folder that holds the rules, to substitute at import (README.md).
	DefaultGrafanaFolderUID = "${GRAFANA_FOLDER_UID}"
)

// Config says which series the alerts watch and where they point. The zero
// value is the configuration of the committed files.
type Config struct {
	// JobSelector is the label matcher, or comma-separated matchers, added to
	// every series selector of every expression, e.g. `job="payments"` or
	// `namespace="billing", job=~"worker-.*"`. Default DefaultJobSelector.
	JobSelector string
	// RunbookURL is the address of RUNBOOK.md; every runbook_url annotation
	// is it plus "#" and the alert's anchor (its name in lower case).
	// Default DefaultRunbookURL.
	RunbookURL string
	// GrafanaDatasourceUID is the uid of the Prometheus data source that the
	// Grafana-managed rules query. Default DefaultGrafanaDatasourceUID.
	GrafanaDatasourceUID string
	// GrafanaFolderUID is the uid of the Grafana folder the Grafana-managed
	// rules live in. Default DefaultGrafanaFolderUID.
	GrafanaFolderUID string
	// TestLabels are the target labels every input series of the generated
	// promtool tests carries. They must satisfy JobSelector, or the tests
	// that expect an alert fail. Default job="lockwatch-demo",
	// instance="127.0.0.1:9464".
	TestLabels map[string]string
}

// withDefaults fills in every default, in one place, and rejects values that
// would produce broken rules.
func (c Config) withDefaults() (Config, error) {
	if c.JobSelector == "" {
		c.JobSelector = DefaultJobSelector
	}
	if c.RunbookURL == "" {
		c.RunbookURL = DefaultRunbookURL
	}
	if c.GrafanaDatasourceUID == "" {
		c.GrafanaDatasourceUID = DefaultGrafanaDatasourceUID
	}
	if c.GrafanaFolderUID == "" {
		c.GrafanaFolderUID = DefaultGrafanaFolderUID
	}
	if c.TestLabels == nil {
		c.TestLabels = map[string]string{labelJob: "lockwatch-demo", labelInstance: "127.0.0.1:9464"}
	} else {
		c.TestLabels = maps.Clone(c.TestLabels)
	}

	c.JobSelector = strings.TrimSpace(c.JobSelector)
	// The selector is pasted between the braces of every selector: braces or
	// a line break in it would change the shape of the expression, not just
	// narrow it. promtool check rules catches everything else.
	if strings.ContainsAny(c.JobSelector, "{}\n") || strings.HasPrefix(c.JobSelector, ",") || strings.HasSuffix(c.JobSelector, ",") {
		return c, fmt.Errorf("alerts: JobSelector %q must be label matchers without braces, e.g. job=\"payments\"", c.JobSelector)
	}
	if strings.Contains(c.RunbookURL, "#") {
		return c, errors.New("alerts: RunbookURL must not carry a fragment: the alert's anchor is appended")
	}
	for name := range c.TestLabels {
		if reservedLabels[name] {
			return c, fmt.Errorf("alerts: TestLabels must not set %q: the test cases set it", name)
		}
	}
	return c, nil
}

package alerts

import (
	"fmt"
	"slices"
	"strings"
)

// The files Generate writes, relative to this directory.
const (
	RulesFile        = "lockwatch.rules.yaml"
	TestsFile        = "lockwatch.rules_test.yaml"
	GrafanaFile      = "grafana-alert-rules.json"
	AlertmanagerFile = "alertmanager.example.yml"
)

// namePrefix starts every alert name.
const namePrefix = "Lockwatch"

// Generate writes lockwatch's alerts for cfg: the Prometheus rule file
// (RulesFile), its promtool unit tests (TestsFile), the same alerts as
// Grafana-managed rules (GrafanaFile) and an example Alertmanager
// configuration routing them (AlertmanagerFile). The result maps file names
// to contents; with the zero Config it is what is committed here.
func Generate(cfg Config) (files map[string][]byte, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	q := promql{jobSelector: cfg.JobSelector}
	recs, alerts := recordings(q), slices.Concat(catalogue(q), elections(q), permits(q), absent(q))
	if err := checkRecordings(recs); err != nil {
		return nil, err
	}
	if err := check(alerts); err != nil {
		return nil, err
	}

	files = map[string][]byte{}
	for name, write := range map[string]func() ([]byte, error){
		RulesFile:        func() ([]byte, error) { return prometheusRules(cfg, recs, alerts) },
		TestsFile:        func() ([]byte, error) { return promtoolTests(cfg, recs, alerts) },
		GrafanaFile:      func() ([]byte, error) { return grafanaRules(cfg, alerts) },
		AlertmanagerFile: alertmanagerConfig,
	} {
		if files[name], err = write(); err != nil {
			return nil, fmt.Errorf("alerts: %s: %w", name, err)
		}
	}
	return files, nil
}

// check enforces the conventions every alert follows, so that a new one
// cannot skip them.
func check(alerts []alert) error {
	seen := map[string]bool{}
	for _, a := range alerts {
		switch {
		case !strings.HasPrefix(a.Name, namePrefix) || strings.ContainsAny(a.Name, " _-"):
			return fmt.Errorf("alerts: %q: names are CamelCase and start with %s", a.Name, namePrefix)
		case seen[a.Name]:
			return fmt.Errorf("alerts: %s defined twice", a.Name)
		case a.Severity != critical && a.Severity != warning:
			return fmt.Errorf("alerts: %s: severity %q is neither %s nor %s", a.Name, a.Severity, critical, warning)
		case a.For <= 0:
			return fmt.Errorf("alerts: %s: no for duration", a.Name)
		case a.Group == "" || a.Summary == "" || !strings.Contains(a.Description, "$value"):
			return fmt.Errorf("alerts: %s: needs a group, a summary and a description using $value", a.Name)
		case strings.Contains(a.Summary, "{{"):
			return fmt.Errorf("alerts: %s: the summary is static; values go in the description", a.Name)
		case len(a.Fires.Series) == 0 || len(a.Silent.Series) == 0 || a.Fires.At <= a.For || a.Silent.At <= a.For:
			return fmt.Errorf("alerts: %s: needs a firing and a silent test case, evaluated after its for duration", a.Name)
		case !slices.Contains(noDataStates, a.NoData.State) || a.NoData.Why == "":
			return fmt.Errorf("alerts: %s: needs a Grafana no-data state and the reason for it", a.Name)
		case slices.Contains(a.By, labelLe):
			return fmt.Errorf("alerts: %s: the le label does not survive histogram_quantile", a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}

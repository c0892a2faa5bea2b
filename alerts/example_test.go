package alerts_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockwatch/lockwatch/alerts"
)

// Generate writes every file; a job selector narrows every expression to
// the jobs to watch. The test labels make the generated promtool tests
// match it.
func ExampleGenerate() {
	files, err := alerts.Generate(alerts.Config{
		JobSelector: `job="payments"`,
		TestLabels:  map[string]string{"job": "payments", "instance": "127.0.0.1:9465"},
	})
	if err != nil {
		panic(err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Println(name)
	}
	for line := range strings.Lines(string(files[alerts.RulesFile])) {
		if strings.Contains(line, "rate(lockwatch_fence_rejections_total") {
			fmt.Print(strings.TrimSpace(line), "\n")
		}
	}
	// Output:
	// alertmanager.example.yml
	// grafana-alert-rules.json
	// lockwatch.rules.yaml
	// lockwatch.rules_test.yaml
	// expr: sum by (job, resource) (rate(lockwatch_fence_rejections_total{job="payments"}[5m])) > 0.05
}

package kubernetes_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockwatch/lockwatch/kubernetes"
)

// Generate builds the PrometheusRule and the dashboard ConfigMaps for a
// namespace and a job; the label is the one a Prometheus object's
// ruleSelector matches.
func ExampleGenerate() {
	files, err := kubernetes.Generate(kubernetes.Config{
		Namespace:   "prod",
		JobSelector: `job="payments"`,
		Labels:      map[string]string{"release": "kube-prometheus-stack"},
	})
	if err != nil {
		panic(err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Println(name)
	}
	for line := range strings.Lines(string(files[kubernetes.PrometheusRuleFile])) {
		if strings.Contains(line, "namespace:") || strings.Contains(line, "release:") ||
			strings.Contains(line, "rate(lockwatch_fence_rejections_total") {
			fmt.Print(strings.TrimSpace(line), "\n")
		}
	}
	// Output:
	// dashboards-configmap.yaml
	// prometheusrule.yaml
	// namespace: prod
	// release: kube-prometheus-stack
	// expr: sum by (job, resource) (rate(lockwatch_fence_rejections_total{job="payments"}[5m])) > 0.05
}

// Package kubernetes generates lockwatch's monitoring as Kubernetes objects,
// from the same catalogue as packages alerts and dashboards:
//
//   - prometheusrule.yaml: a PrometheusRule (monitoring.coreos.com/v1) for
//     the Prometheus Operator, whose spec.groups are exactly the rule groups
//     of alerts' lockwatch.rules.yaml for the same job selector.
//   - dashboards-configmap.yaml: one ConfigMap per Grafana dashboard, labelled
//     grafana_dashboard: "1" for the dashboard sidecar of Grafana's Helm chart
//     (and kube-prometheus-stack), each holding one data key, the dashboard's
//     file name (overview.json, lock-detail.json), whose value is the JSON
//     dashboards.Generate writes, byte for byte.
//
// The files are committed, generated with the default Config (namespace
// monitoring, every job). A test fails when they differ from a fresh
// Generate, so change the alerts or dashboards generators, or this one, and
// run
//
//	go generate ./kubernetes/...
//
// never edit the YAML.
//
// # One source of truth
//
// Generate does not rebuild the rules: it decodes the rule file that
// alerts.Generate writes and re-encodes its groups under spec.groups. A rule
// group or rule added to the alerts catalogue, recording rules included
// (record instead of alert), flows into the PrometheusRule with no change
// here. The decoding is strict: a field that the PrometheusRule CRD lacks
// makes Generate fail instead of silently dropping it.
//
// # Apply
//
//	kubectl apply -f kubernetes/prometheusrule.yaml -f kubernetes/dashboards-configmap.yaml
//
// Prometheus Operator picks a PrometheusRule up only when it matches the
// Prometheus object's ruleSelector (by labels) and ruleNamespaceSelector.
// The objects carry app.kubernetes.io/name and app.kubernetes.io/part-of
// set to lockwatch; add the label your ruleSelector wants with -label (a
// kube-prometheus-stack installation selects release: <its release name>).
// The Grafana sidecar reads ConfigMaps labelled grafana_dashboard in its own
// namespace unless its searchNamespace says otherwise, so generate them for
// that namespace. Each ConfigMap also carries the annotation
// grafana_folder: lockwatch; the sidecar files the dashboards in that folder
// when its chart sets sidecar.dashboards.folderAnnotation: grafana_folder
// and sidecar.dashboards.provider.foldersFromFilesStructure: true, and
// ignores it otherwise.
//
// # Your namespace and job
//
// Generate the objects for another namespace, job selector or labels with
// the generator's flags, into a directory of your own:
//
//	go run ./kubernetes/gen -namespace prod -job-selector 'job="payments"' -out ./deploy
//	go run ./kubernetes/gen -namespace monitoring -label release=kube-prometheus-stack -out ./deploy
//
// The dashboards take no job selector: their job and instance variables
// select the series in Grafana.
package kubernetes

//go:generate go run ./gen

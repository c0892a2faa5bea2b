module github.com/lockwatch/lockwatch/kubernetes

go 1.26.0

require (
	github.com/lockwatch/lockwatch v0.0.0
	github.com/lockwatch/lockwatch/alerts v0.0.0
	github.com/lockwatch/lockwatch/dashboards v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.5
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/grafana/grafana-foundation-sdk/go v0.0.22 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
)

replace (
	github.com/lockwatch/lockwatch => ..
	github.com/lockwatch/lockwatch/alerts => ../alerts
	github.com/lockwatch/lockwatch/dashboards => ../dashboards
)

package telemetry_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/lockwatch/lockwatch/telemetry"
)

// The Metrics table is what dashboards and alerts are generated from.
func ExampleMetrics() {
	for _, m := range telemetry.Metrics[:3] {
		fmt.Println(m.Prom, m.Kind, m.Labels)
	}
	// Output:
	// lockwatch_lease_acquires_total counter [lock_name result]
	// lockwatch_lease_acquire_duration_seconds histogram [lock_name result]
	// lockwatch_lease_unknown_resolutions_total counter [lock_name resolution]
}

func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	// Pass it to lease.NewLocker with lease.WithTelemetry, and to the
	// middleware and fence guards of the same service.
	tel := telemetry.New(telemetry.WithMeterProvider(mp))
	ctx, span := tel.StartFenceCheck(context.Background(), "ledger")
	tel.EndFenceCheck(ctx, span, "ledger", 41, 42, false) // a stale write, stopped

	values, _, _ := sumsOf(reader)
	fmt.Println(values[telemetry.FenceRejections+"{resource=ledger}"])
	// Output: 1
}

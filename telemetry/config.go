package telemetry

import (
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Config says where a Telemetry records (New). The zero value records to
// the global OpenTelemetry providers and slog.Default(), keys hashed.
type Config struct {
	// TracerProvider is where spans go. Default (nil): the global provider
	// (otel.GetTracerProvider), also when it is set after New.
	TracerProvider trace.TracerProvider
	// MeterProvider is where metrics go. Default (nil): the global provider
	// (otel.GetMeterProvider), also when it is set after New.
	MeterProvider metric.MeterProvider
	// Logger receives losses, unknown acquires, renewal failures and fence
	// rejections at Warn level, each with trace_id and span_id when the
	// context carries a span. Default (nil): slog.Default(), so that the
	// events that mean "a lock may not have protected anything" are
	// visible without any set-up; slog.New(slog.DiscardHandler) silences
	// them.
	Logger *slog.Logger
	// RawKeys puts the caller's lock key on spans (attribute
	// lockwatch.key). Default: spans carry only its hash
	// (lockwatch.key.hash), because keys are often customer or tenant
	// identifiers. Keys never go on metrics.
	RawKeys bool
}

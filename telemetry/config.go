package telemetry

import (
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Config says where a Telemetry records (New); its zero value: defaults.
type Config struct {
	// TracerProvider gets spans; nil: the global one, even if set after New.
	TracerProvider trace.TracerProvider
	// MeterProvider gets metrics; nil: the global one, even if set after New.
	MeterProvider metric.MeterProvider
	// Logger gets the Warn logs (see Logs); nil: slog.Default().
	Logger *slog.Logger
	// RawKeys puts the lock key on spans; false: only its hash (Cardinality).
	RawKeys bool
}

package telemetry

import (
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures New.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	logger  *slog.Logger
	rawKeys bool
}

// WithTracerProvider sets where spans go. Default: the global provider
// (otel.GetTracerProvider), also when it is set after New. Nil is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tp = tp
		}
	})
}

// WithMeterProvider sets where metrics go. Default: the global provider
// (otel.GetMeterProvider), also when it is set after New. Nil is ignored.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp != nil {
			c.mp = mp
		}
	})
}

// WithLogger sets the logger that receives losses, unknown acquires,
// renewal failures and fence rejections at Warn level, each with trace_id
// and span_id when the context carries a span. Default: slog.Default(), so
// that the events that mean "a lock may not have protected anything" are
// visible without any set-up; pass slog.New(slog.DiscardHandler) to silence
// them. Nil is ignored.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.logger = l
		}
	})
}

// WithRawKeys puts the caller's lock key on spans (attribute lockwatch.key).
// By default spans carry only its hash (lockwatch.key.hash), because keys
// are often customer or tenant identifiers. Keys never go on metrics.
func WithRawKeys() Option { return optionFunc(func(c *config) { c.rawKeys = true }) }

func newConfig(opts []Option) config {
	c := config{}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}

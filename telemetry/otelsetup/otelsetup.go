// Package otelsetup wires the OpenTelemetry SDK for a service that uses
// lockwatch: a MeterProvider whose metrics are served in the Prometheus and
// OpenMetrics formats (exemplars included), and a TracerProvider that exports
// over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set.
//
// It is optional and kept apart from the core: lease, middleware and
// telemetry depend on the OpenTelemetry API only, so a service that already
// configures the SDK its own way never links this package.
//
// Spans are sampled (parent-based, always on for new traces) even without an
// exporter, so that metric exemplars carry trace and span ids; without an
// OTLP endpoint those ids point to traces that are not stored anywhere.
//
// # One exemplar per counter
//
// The SDK's default reservoir for a counter keeps GOMAXPROCS exemplars,
// filled in order after each collection, and the Prometheus exporter shows
// only the last of them. For a counter of rare events (stale writes, lost
// leases) the last slot is refilled only when GOMAXPROCS events fall
// between two scrapes, so the exemplar on the scrape stays on an old trace
// for minutes; two Prometheus servers scraping one process (an HA pair)
// make it worse. New gives every counter a reservoir of one instead
// (ExemplarView): after each collection the first event takes it, and a
// later one of the same interval replaces it at random, so each scrape that
// follows an event shows one of the events since the last scrape. A service
// that builds its own MeterProvider and serves it through the Prometheus
// exporter adds sdkmetric.WithView(otelsetup.ExemplarView()) after its own
// views. The SDK keeps one stream per metric name, that of the first view
// that matches: a counter one of the service's views matches keeps that
// view's stream, and that view needs the same selector
// (exemplar.FixedSizeReservoirProvider(1)) in its Stream.
package otelsetup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Providers holds the SDK providers and the Prometheus registry they feed.
type Providers struct {
	MeterProvider  *sdkmetric.MeterProvider
	TracerProvider *sdktrace.TracerProvider
	// Registry holds the OTel exporter's collector; register the service's
	// own client_golang collectors here too, to serve them on one handler.
	Registry *prometheus.Registry
}

// Config configures New. The zero value gives the defaults.
type Config struct {
	// Resource describes the service. Default (nil): resource.Default(),
	// which reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
	Resource *resource.Resource
}

// New builds the providers. It does not make them global: call SetGlobal for
// that, and Shutdown on exit.
func New(ctx context.Context, c Config) (*Providers, error) {
	if c.Resource == nil {
		c.Resource = resource.Default()
	}
	registry := prometheus.NewRegistry()
	exporter, err := promexporter.New(promexporter.WithRegisterer(registry))
	if err != nil {
		return nil, fmt.Errorf("otelsetup: prometheus exporter: %w", err)
	}
	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(c.Resource)}
	if otlpConfigured() {
		spans, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("otelsetup: OTLP trace exporter: %w", err)
		}
		traceOpts = append(traceOpts, sdktrace.WithBatcher(spans))
	}
	return &Providers{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithResource(c.Resource),
			sdkmetric.WithView(ExemplarView())),
		TracerProvider: sdktrace.NewTracerProvider(traceOpts...),
		Registry:       registry,
	}, nil
}

// ExemplarView is the view New installs: each series of every synchronous
// counter keeps one exemplar per collection (see the package doc). Other
// instruments keep the SDK's defaults: a histogram already keeps one
// exemplar per bucket, sampled the same way.
func ExemplarView() sdkmetric.View {
	return sdkmetric.NewView(sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindCounter},
		sdkmetric.Stream{ExemplarReservoirProviderSelector: func(sdkmetric.Aggregation) exemplar.ReservoirProvider {
			return exemplar.FixedSizeReservoirProvider(1)
		}})
}

func otlpConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Handler serves the registry, in the OpenMetrics format (with exemplars)
// to scrapers that ask for it, in the Prometheus text format otherwise.
func (p *Providers) Handler() http.Handler {
	return promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// SetGlobal makes the providers the global ones, with W3C trace-context and
// baggage propagation, so that lockwatch (whose default is the globals) and
// every other instrumented library report through them.
func (p *Providers) SetGlobal() {
	otel.SetMeterProvider(p.MeterProvider)
	otel.SetTracerProvider(p.TracerProvider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
}

// Shutdown flushes and stops both providers.
func (p *Providers) Shutdown(ctx context.Context) error {
	return errors.Join(p.TracerProvider.Shutdown(ctx), p.MeterProvider.Shutdown(ctx))
}

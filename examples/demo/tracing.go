package main

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// HTTP spans come from otelhttp, as a service's would: lockwatch records
// its span events (lease.lost, lease.late_completion, ...) on the request's
// span and its exemplars from the request's trace, so every HTTP request
// gets a server span, and calls to the ledger continue the trace (W3C
// traceparent, the propagator SetGlobal installs).

// traced wraps a handler registered on a ServeMux in otelhttp's server
// span. Wrapped per route, the span starts with the request's pattern
// known, so its name is "{method} {route}" and http.route its path
// template, as the HTTP semantic conventions have them.
func (d *demo) traced(next http.Handler) http.Handler {
	return otelhttp.NewHandler(next, "",
		otelhttp.WithTracerProvider(d.providers.TracerProvider),
		otelhttp.WithMeterProvider(d.providers.MeterProvider))
}

// tracedTransport starts a client span per request on next and passes its
// context on. The span is named "{method}", the conventions' name for a
// client without a URL template (otelhttp's own default is "HTTP {method}").
func (d *demo) tracedTransport(next http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(next,
		otelhttp.WithTracerProvider(d.providers.TracerProvider),
		otelhttp.WithMeterProvider(d.providers.MeterProvider),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

package main

import (
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HTTP spans, in the few lines the demo needs (a service would use otelhttp
// from opentelemetry-go-contrib): lockwatch records its span events
// (lease.lost, lease.late_completion, ...) on the request's span and its
// exemplars from the request's trace, so every HTTP request gets a server
// span, and calls to the ledger continue the trace (W3C traceparent).

const tracerName = "github.com/lockwatch/lockwatch/examples/demo"

var propagator = propagation.TraceContext{}

// traced wraps a handler registered on a ServeMux in a server span named
// after its route, as the HTTP semantic conventions name it: "{method}
// {route}", the route being the pattern's path template (http.route has
// no method in it).
func (d *demo) traced(next http.Handler) http.Handler {
	tracer := d.providers.TracerProvider.Tracer(tracerName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Pattern[strings.IndexByte(r.Pattern, ' ')+1:]
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
				attribute.String("url.path", r.URL.Path), attribute.String("url.scheme", "http")))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// tracingTransport starts a client span per request and passes its context
// on in the traceparent header.
type tracingTransport struct {
	next   http.RoundTripper
	tracer trace.Tracer
}

func (t tracingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	port, _ := strconv.Atoi(r.URL.Port())
	ctx, span := t.tracer.Start(r.Context(), r.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.full", r.URL.String()),
			attribute.String("server.address", r.URL.Hostname()), attribute.Int("server.port", port)))
	defer span.End()
	r = r.Clone(ctx)
	propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}

package obs

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The resource side: a fenced store or guard checks a write's token against
// the newest it accepted. resource is a bounded name (a table, a service).

// StartFenceCheck starts the fence.check span, a child of ctx's span.
func (t *Recorder) StartFenceCheck(ctx context.Context, resource string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, SpanFenceCheck, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(AttrResource, resource)))
}

// EndFenceCheck records a check and, when the token was stale, a rejection
// (with an exemplar of ctx's span, so a stale-write spike links to the trace
// that wrote late), logged at Warn. highWater is the newest token the
// resource had accepted, when known. A rejection is the fence working, not a
// failure of the resource: the span status stays unset.
func (t *Recorder) EndFenceCheck(ctx context.Context, span trace.Span, resource string, token, highWater int64, accepted bool) {
	result := FenceAccepted
	if !accepted {
		result = FenceRejected
	}
	t.fenceChecks.Add(ctx, 1, t.resource(resource, AttrResult, string(result)).add...)
	span.SetAttributes(attribute.String(AttrResult, string(result)), attribute.Int64(AttrFence, token))
	if highWater > 0 {
		span.SetAttributes(attribute.Int64(AttrHighWater, highWater))
	}
	if !accepted {
		t.fenceRejections.Add(ctx, 1, t.resource(resource, "", "").add...)
		t.warn(ctx, "lockwatch: stale write rejected by the fence", slog.String(AttrResource, resource),
			slog.Int64(AttrFence, token), slog.Int64(AttrHighWater, highWater))
	}
	span.End()
}

// LateWrite records a write that a guard refused because its request's
// handler had returned: work that outlived its admission (an
// http.TimeoutHandler inside the guard, a goroutine) and would otherwise
// have written unordered, perhaps after a newer token's write. Logged at
// Warn: the service's handler returns before its work is done.
func (t *Recorder) LateWrite(ctx context.Context, resource string) {
	t.fenceChecks.Add(ctx, 1, t.resource(resource, AttrResult, string(FenceLate)).add...)
	t.warn(ctx, "lockwatch: write refused: its request's handler had returned before it", slog.String(AttrResource, resource))
}

// RefuseFenceCheck records a token the resource refused before comparing it
// with the mark (result is one of the token refusals of FenceResults): a
// caller that sent a token of another key, a forged one, or none the
// resource accepts. Logged at Warn with the reason; never a rejection, so
// the stale-write alerts do not page for it.
func (t *Recorder) RefuseFenceCheck(ctx context.Context, span trace.Span, resource string, result FenceResult, token int64, err error) {
	t.fenceChecks.Add(ctx, 1, t.resource(resource, AttrResult, string(result)).add...)
	if span != nil {
		span.SetAttributes(attribute.String(AttrResult, string(result)), attribute.Int64(AttrFence, token))
		span.End()
	}
	t.warn(ctx, "lockwatch: fencing token refused", slog.String(AttrResource, resource),
		slog.String(AttrResult, string(result)), slog.Int64(AttrFence, token), slog.String("error", err.Error()))
}

package obs

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The resource side: a fenced store or guard checks a write's token against
// the newest it accepted. Resource is a bounded name (a table, a service).

// FenceCheck is a token compared with a resource's mark.
type FenceCheck struct {
	Resource  string
	Fence     int64 // the token's
	HighWater int64 // the newest the resource had accepted, when known
	Accepted  bool
}

// FenceRefusal is a token a resource refused before comparing it with the
// mark: a caller that sent a token of another key, a forged one, or none
// the resource accepts.
type FenceRefusal struct {
	Resource string
	Result   FenceResult // one of the token refusals of FenceResults
	Fence    int64
	Err      error
}

// FenceRepair is an operator's repair of a resource's high-water mark
// (fence.RedisStore.Repair): the mark, Before, was ahead of every fence
// minted for Key and is now After, the newest fence minted or the store's
// clock, whichever is later.
type FenceRepair struct {
	Resource      string
	Key           Key
	Before, After int64
}

// StartFenceCheck starts the fence.check span, a child of ctx's span.
func (t *Recorder) StartFenceCheck(ctx context.Context, resource string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, SpanFenceCheck, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(AttrResource, resource)))
}

// EndFenceCheck records a check and, when the token was stale, a rejection
// (with an exemplar of ctx's span, so a stale-write spike links to the trace
// that wrote late), logged at Warn, and ends span, its fence.check span. A
// rejection is the fence working, not a failure of the resource: the span
// status stays unset.
func (t *Recorder) EndFenceCheck(ctx context.Context, span trace.Span, ev FenceCheck) {
	result := FenceAccepted
	if !ev.Accepted {
		result = FenceRejected
	}
	t.fenceChecks.Add(ctx, 1, t.resource(ev.Resource, AttrResult, string(result)).add...)
	span.SetAttributes(attribute.String(AttrResult, string(result)), attribute.Int64(AttrFence, ev.Fence))
	if ev.HighWater > 0 {
		span.SetAttributes(attribute.Int64(AttrHighWater, ev.HighWater))
	}
	if !ev.Accepted {
		t.fenceRejections.Add(ctx, 1, t.resource(ev.Resource, "", "").add...)
		t.warn(ctx, "lockwatch: stale write rejected by the fence", slog.String(AttrResource, ev.Resource),
			slog.Int64(AttrFence, ev.Fence), slog.Int64(AttrHighWater, ev.HighWater))
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

// RefuseFenceCheck records a refused token and ends span, its fence.check
// span if it has one (nil: none). Logged at Warn with the reason; never a
// rejection, so the stale-write alerts do not page for it.
func (t *Recorder) RefuseFenceCheck(ctx context.Context, span trace.Span, ev FenceRefusal) {
	result := string(ev.Result)
	t.fenceChecks.Add(ctx, 1, t.resource(ev.Resource, AttrResult, result).add...)
	if span != nil {
		span.SetAttributes(attribute.String(AttrResult, result), attribute.Int64(AttrFence, ev.Fence))
		span.End()
	}
	t.warn(ctx, "lockwatch: fencing token refused", slog.String(AttrResource, ev.Resource),
		slog.String(AttrResult, result), slog.Int64(AttrFence, ev.Fence), slog.String("error", ev.Err.Error()))
}

// FenceRepaired records a repair of a mark. Counted, and logged at Warn: a
// mark set back lets writes through that it refused, so an operator must
// be able to find afterwards who did it and from what; and a mark that a
// token no lease carried had moved ahead is worth a look at where that
// token came from.
func (t *Recorder) FenceRepaired(ctx context.Context, ev FenceRepair) {
	t.fenceRepairs.Add(ctx, 1, t.resource(ev.Resource, "", "").add...)
	t.warn(ctx, "lockwatch: fence mark set back below a token no lease carried", slog.String(AttrResource, ev.Resource),
		slog.String(t.keyField(ev.Key)), slog.Int64(AttrHighWater, ev.Before), slog.Int64(AttrFence, ev.After))
}

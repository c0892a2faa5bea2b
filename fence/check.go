package fence

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// check is one fence check in flight: the fence.check span and what ending
// it needs. Every store operation ends its check exactly once: done (the
// token was compared: counted, and a rejection counted as one), or failed
// and missing (no comparison happened: the span says why, the counters do
// not move, so that the rejection alerts count stale writes only).
type check struct {
	tel      *obs.Recorder
	ctx      context.Context
	span     trace.Span
	resource string
	token    Token
}

// startCheck starts the span as a child of the caller's ctx and returns the
// context to run the store's commands in, so that their own spans (a Redis
// or database instrumentation) nest under fence.check.
func startCheck(ctx context.Context, tel *obs.Recorder, resource string, token Token, attrs ...attribute.KeyValue) (context.Context, check) {
	ctx, span := tel.StartFenceCheck(ctx, resource)
	span.SetAttributes(attrs...)
	return ctx, check{tel: tel, ctx: ctx, span: span, resource: resource, token: token}
}

// done records the comparison. The counters take the context of the span,
// which is the caller's span's trace: a rejection's exemplar leads to the
// request that wrote late.
func (c check) done(accepted bool, highWater int64) {
	ev := obs.FenceCheck{Resource: c.resource, Fence: c.token.Fence, HighWater: highWater, Accepted: accepted}
	c.tel.EndFenceCheck(c.ctx, c.span, ev)
}

// refused records a token refused before any comparison with the mark
// (policy.check, or the clock bound in the store): counted under its own
// result, never as a rejection.
func (c check) refused(err error) error {
	result, _ := refusal(err)
	c.tel.RefuseFenceCheck(c.ctx, c.span, obs.FenceRefusal{Resource: c.resource, Result: result, Fence: c.token.Fence, Err: err})
	return err
}

func (c check) failed(err error) {
	c.span.SetAttributes(attribute.Int64(obs.AttrFence, c.token.Fence))
	c.span.RecordError(err)
	c.span.SetStatus(codes.Error, err.Error())
	c.span.End()
}

// missing ends the check of a write to a row that does not exist: not a
// failure of the store, and not a stale token either.
func (c check) missing() {
	c.span.SetAttributes(attribute.Int64(obs.AttrFence, c.token.Fence),
		attribute.String(obs.AttrResult, obs.SpanResultNotFound))
	c.span.End()
}

package fence

import (
	"context"
	"fmt"

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
func (c check) done(accepted bool, highWater Token) {
	c.tel.EndFenceCheck(c.ctx, c.span, c.resource, int64(c.token), int64(highWater), accepted)
}

func (c check) failed(err error) {
	c.span.SetAttributes(attribute.Int64(obs.AttrFence, int64(c.token)))
	c.span.RecordError(err)
	c.span.SetStatus(codes.Error, err.Error())
	c.span.End()
}

// missing ends the check of a write to a row that does not exist: not a
// failure of the store, and not a stale token either.
func (c check) missing() {
	c.span.SetAttributes(attribute.Int64(obs.AttrFence, int64(c.token)),
		attribute.String(obs.AttrResult, obs.SpanResultNotFound))
	c.span.End()
}

// validToken rejects what no lease mints: a token must be positive. Such a
// call is a caller's bug, not a check, so it is neither counted nor traced.
func validToken(t Token) error {
	if t <= 0 {
		return fmt.Errorf("%w: %d is not positive", ErrMalformed, int64(t))
	}
	return nil
}

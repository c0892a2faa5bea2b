package obs

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// warn logs msg at Warn with the trace and span ids of ctx's span, so a log
// line leads to its trace.
func (t *Recorder) warn(ctx context.Context, msg string, attrs ...slog.Attr) {
	if !t.logger.Enabled(ctx, slog.LevelWarn) {
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	t.logger.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}

// withErr returns attrs with the error behind them, if there is one: a
// rejected renewal has none, and "error=<nil>" in a log line reads as one.
func withErr(err error, attrs ...slog.Attr) []slog.Attr {
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	return attrs
}

package obs

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// warn logs msg at Warn with the trace and span ids of ctx's span, so a log
// line leads to its trace.
func (t *Recorder) warn(ctx context.Context, msg string, attrs ...slog.Attr) {
	t.log(ctx, slog.LevelWarn, msg, attrs...)
}

// log logs msg at level, as warn does.
func (t *Recorder) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if !t.logger.Enabled(ctx, level) {
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	t.logger.LogAttrs(ctx, level, msg, attrs...)
}

// lossLevel is the level a loss is logged at: Warn, but Info for a shared
// lease's reader making way for a writer, which is its design.
func lossLevel(reason LossReason) slog.Level {
	if reason == LossYielded {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// withErr returns attrs with the error behind them, if there is one: a
// rejected renewal has none, and "error=<nil>" in a log line reads as one.
func withErr(err error, attrs ...slog.Attr) []slog.Attr {
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	return attrs
}

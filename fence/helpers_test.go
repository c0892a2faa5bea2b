package fence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// harness is the shared in-memory telemetry (every span sampled, so
// exemplars are recorded) with the fence's series.
type harness struct{ *telemetrytest.Harness }

func newHarness(t *testing.T) harness { return harness{telemetrytest.New(t)} }

// counts are the fence counters of one resource.
type counts struct{ accepted, rejected, rejections int64 }

func (h harness) counts(t *testing.T, resource string) counts {
	t.Helper()
	return counts{
		accepted:   h.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, resource, obs.AttrResult, string(obs.FenceAccepted))),
		rejected:   h.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, resource, obs.AttrResult, string(obs.FenceRejected))),
		rejections: h.Sum(t, obs.FenceRejections, telemetrytest.Attrs(obs.AttrResource, resource)),
	}
}

// rejectionExemplars returns the trace ids of the exemplars on a resource's
// rejections.
func (h harness) rejectionExemplars(t *testing.T, resource string) []trace.TraceID {
	t.Helper()
	var ids []trace.TraceID
	for _, m := range h.Collect(t) {
		s, ok := m.Data.(metricdata.Sum[int64])
		if !ok || m.Name != obs.FenceRejections {
			continue
		}
		for _, dp := range s.DataPoints {
			if v, ok := dp.Attributes.Value(obs.AttrResource); ok && v.AsString() == resource {
				for _, e := range dp.Exemplars {
					ids = append(ids, trace.TraceID(e.TraceID))
				}
			}
		}
	}
	return ids
}

// checkSpans returns the ended fence.check spans.
func (h harness) checkSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range h.Spans.Ended() {
		if s.Name() == obs.SpanFenceCheck {
			out = append(out, s)
		}
	}
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tk is the unsigned token a lease of key (a row key: as fmt.Sprint prints
// it, TableConfig.LockKey's default) in the default lease namespace carries
// with fence n.
func tk(key any, n int64) fence.Token { return fence.Mint("lockwatch", fmt.Sprint(key), n, nil) }

// signing signs the tokens of the tests whose fences are beyond any clock
// (the int64 range): only signed tokens escape the clock bound.
var signing = func() *fence.Secrets {
	s, err := fence.NewSecrets("t1", map[string][]byte{"t1": []byte("lockwatch-test-secret-of-32-bytes")})
	if err != nil {
		panic(err)
	}
	return s
}()

// signed is tk's token, signed with signing.
func signed(key any, n int64) fence.Token {
	return fence.Mint("lockwatch", fmt.Sprint(key), n, signing)
}

package lease

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/telemetry"
)

// backend is one Redis deployment the behaviour suite runs against.
type backend struct {
	name   string
	client func(t *testing.T) redis.UniversalClient
}

// backends starts a single node and a 3-master cluster once per top-level
// test; every subtest uses its own namespace, so they never see each
// other's keys.
func backends(t *testing.T) []backend {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	return []backend{
		{"single", func(t *testing.T) redis.UniversalClient { return single.Client(t) }},
		{"cluster", func(t *testing.T) redis.UniversalClient { return cluster.Client(t) }},
	}
}

var nsSeq atomic.Int64

var nsUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// testNamespace returns a namespace no other test uses.
func testNamespace(t testing.TB) string {
	name := nsUnsafe.ReplaceAllString(t.Name(), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return fmt.Sprintf("t%d_%s", nsSeq.Add(1), name)
}

// newLocker returns a Locker taking cfg, in a fresh namespace unless cfg
// names one, closed when the test ends.
func newLocker(t testing.TB, c redis.UniversalClient, cfg Config) *Locker {
	if cfg.Namespace == "" {
		cfg.Namespace = testNamespace(t)
	}
	lk := NewLocker(c, cfg)
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// with returns lk.With(cfg), failing the test on an error.
func with(t testing.TB, lk *Locker, cfg Config) *Locker {
	t.Helper()
	derived, err := lk.With(cfg)
	require.NoError(t, err)
	return derived
}

// waitIdle returns once lk's renewal loop has taken its first step and
// sleeps with nothing held, so that an acquire meets the loop as it is on
// a Locker that has been idle, not one still starting.
func waitIdle(t *testing.T, lk *Locker) {
	t.Helper()
	s := lk.sched
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.armed != math.MaxInt64 && s.dlQ.next() == nil
	}, time.Second, time.Millisecond, "the renewal loop never took its first step")
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// observed holds a Locker's signals, recorded in memory (Config.Telemetry):
// the tests read what a Locker reports as a dashboard or a log search
// would, under the lock name defaultName.
type observed struct{ *telemetrytest.Harness }

// observe returns an observed harness and the Telemetry that makes a
// Locker report to it.
func observe(t *testing.T) (observed, *telemetry.Telemetry) {
	h := telemetrytest.New(t)
	return observed{h}, h.Tel
}

// acquires returns the lease.acquire spans ended so far, one per Acquire
// call, in order.
func (o observed) acquires() []sdktrace.ReadOnlySpan { return o.Ended(obs.SpanAcquire) }

// lastAcquire returns the result and attempts of the last Acquire call.
func (o observed) lastAcquire(t *testing.T) (obs.AcquireResult, int64) {
	t.Helper()
	spans := o.acquires()
	require.NotEmpty(t, spans)
	last := spans[len(spans)-1]
	return obs.AcquireResult(telemetrytest.Attr(last, obs.AttrResult).AsString()), telemetrytest.Attr(last, obs.AttrAttempts).AsInt64()
}

// count returns a counter of defaultName's, e.g. count(t, obs.LeaseReleases,
// obs.AttrResult, "released").
func (o observed) count(t *testing.T, name string, kv ...string) int64 {
	t.Helper()
	return o.Sum(t, name, lockAttrs(defaultName, kv...))
}

// byResult returns a counter of defaultName's by each result of its set.
func byResult[R ~string](t *testing.T, o observed, name string, set []R) map[R]int64 {
	t.Helper()
	out := map[R]int64{}
	for _, r := range set {
		out[r] = o.count(t, name, obs.AttrResult, string(r))
	}
	return out
}

// renewals returns the renewals counted by result.
func (o observed) renewals(t *testing.T) map[obs.RenewalResult]int64 {
	t.Helper()
	return byResult(t, o, obs.LeaseRenewals, obs.RenewalResults)
}

// waitResolution waits for the first unknown acquire's clean-up to be
// reported and returns how it ended.
func (o observed) waitResolution(t *testing.T) obs.ResolutionResult {
	t.Helper()
	return obs.ResolutionResult(o.Logs.Wait(t, "unknown acquire cleaned up", 1)[0].Attrs[obs.AttrResult])
}

// waitLosses waits until n losses were reported and returns their log
// records. (A lease's context is cancelled before its loss is reported,
// so Done alone does not mean the report has run.)
func (o observed) waitLosses(t *testing.T, n int) []telemetrytest.Log {
	t.Helper()
	return o.Logs.Wait(t, "lease lost", n)
}

// instant returns the clock instant a record was kept at.
func instant(l telemetrytest.Log) time.Duration { return clock.Now() - time.Since(l.Time) }

// waitDone waits for the lease's context to end and returns its cause.
func waitDone(t *testing.T, l *Lease, within time.Duration) error {
	t.Helper()
	select {
	case <-l.Context().Done():
		return context.Cause(l.Context())
	case <-time.After(within):
		t.Fatalf("lease context still alive after %v", within)
		return nil
	}
}

// lossReason returns the reason of a lost lease's context cause.
func lossReason(t *testing.T, cause error) LossReason {
	t.Helper()
	var lost *LostError
	require.ErrorAs(t, cause, &lost)
	require.ErrorIs(t, cause, ErrLost)
	return lost.Reason
}

// hookFunc is a go-redis hook made of one function, called with the
// commands of every command or pipeline and the step that sends them.
type hookFunc func(cmds []redis.Cmder, send func() error) error

func (f hookFunc) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f hookFunc) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return f([]redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}
func (f hookFunc) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return f(cmds, func() error { return next(ctx, cmds) })
	}
}

// cmdCounter counts the scripts and pipelines of scripts a client sends,
// for round-trip claims. (Connection set-up commands such as HELLO and
// CLIENT SETINFO pass the hooks too; they are not counted.)
type cmdCounter struct {
	cmds, pipelines, pipelined atomic.Int64
}

func (h *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") {
			h.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if strings.HasPrefix(cmds[0].Name(), "eval") {
			h.pipelines.Add(1)
			h.pipelined.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// errTimeout stands for a reply that never came.
var errTimeout = fmt.Errorf("read tcp 127.0.0.1: i/o timeout: %w", os.ErrDeadlineExceeded)

// acquireReleaseN takes and releases key n times, checks that every fence
// is larger than the one before, and returns the last.
func acquireReleaseN(ctx context.Context, t *testing.T, lk *Locker, key string, n int) int64 {
	t.Helper()
	var last int64
	for range n {
		l, err := lk.Acquire(ctx, key)
		require.NoError(t, err)
		require.Greater(t, l.Fence(), last)
		last = l.Fence()
		require.NoError(t, l.Release(ctx))
	}
	return last
}

// ownerOf and fenceKeyOf return a lease's owner token and fence key.
func ownerOf(l *Lease) string    { return l.owner }
func fenceKeyOf(l *Lease) string { return keysOf(l.set.Namespace, l.key).Fence }

// recordFence reads the fence of a key's fence record
// ("<fence>/<ended>+<ended>...~<contended>...", scripts/record.lua).
func recordFence(ctx context.Context, c redis.UniversalClient, fenceKey string) (int64, error) {
	rec, err := c.Get(ctx, fenceKey).Result()
	if err != nil {
		return 0, err
	}
	if i := strings.IndexAny(rec, "/+!~"); i >= 0 {
		rec = rec[:i]
	}
	return strconv.ParseInt(rec, 10, 64)
}

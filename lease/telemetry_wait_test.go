package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// waits returns the waits of lock "report" recorded so far, by result.
func waits(t *testing.T, h *telemetrytest.Harness) map[obs.WaitResult]uint64 {
	t.Helper()
	out := map[obs.WaitResult]uint64{}
	for _, r := range obs.WaitResults {
		if n, _ := h.Hist(t, obs.LeaseWaitDuration, lockAttrs("report", obs.AttrResult, string(r))); n > 0 {
			out[r] = n
		}
	}
	return out
}

// waitingSeries says whether lock "report" has a waiting-gauge series, and
// its value.
func waitingSeries(t *testing.T, h *telemetrytest.Harness) (exists bool, value int64) {
	t.Helper()
	for _, m := range h.Collect(t) {
		if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == obs.LeaseWaiting {
			for _, dp := range s.DataPoints {
				if v, _ := dp.Attributes.Value(obs.AttrLockName); v.AsString() == "report" {
					return true, dp.Value
				}
			}
		}
	}
	return false, 0
}

// waiterOutcome is how a waiter's Acquire ended: a lease, an error, or a
// panic.
type waiterOutcome struct {
	l        *Lease
	err      error
	panicked any
}

// startWaiter runs Acquire of key "k" on a goroutine and returns once the
// waiting gauge counts it: it has had a contended answer and backs off.
func startWaiter(t *testing.T, h *telemetrytest.Harness, lk *Locker, ctx context.Context) <-chan waiterOutcome {
	t.Helper()
	done := make(chan waiterOutcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- waiterOutcome{panicked: p}
			}
		}()
		l, err := lk.Acquire(ctx, "k")
		done <- waiterOutcome{l: l, err: err}
	}()
	h.EventuallySum(t, obs.LeaseWaiting, lockAttrs("report"), 1)
	return done
}

func outcomeOf(t *testing.T, done <-chan waiterOutcome) waiterOutcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not return")
		return waiterOutcome{}
	}
}

// TestTelemetryWaitEnds: a caller waiting for a held key (Config.Wait)
// counts on the waiting gauge until its Acquire returns, however the wait
// ends, and the wait is recorded once with its result.
func TestTelemetryWaitEnds(t *testing.T) {
	// The waiter backs off in short steps, so that what the case does takes
	// effect at its next attempt; the cancelled one in long steps, so that
	// the cancel comes during a backoff (during an attempt in flight it
	// makes the acquire unknown: the next case).
	short := Config{BackoffMin: time.Millisecond, BackoffMax: 20 * time.Millisecond}
	long := Config{BackoffMin: time.Minute, BackoffMax: time.Minute} // capped by the holder's TTL
	for _, c := range []struct {
		name    string
		backoff Config
		end     func(w *waitCase)
		check   func(t *testing.T, o waiterOutcome)
		want    obs.WaitResult
	}{
		{"the holder releases", short, func(w *waitCase) {
			time.Sleep(50 * time.Millisecond) // a wait of at least this long
			require.NoError(w.t, w.holder.Release(w.ctx))
		}, func(t *testing.T, o waiterOutcome) {
			require.NoError(t, o.err)
			require.NoError(t, o.l.Release(context.Background()))
		}, obs.WaitAcquired},
		{"the caller's context is cancelled during a backoff", long, func(w *waitCase) { w.cancel() },
			func(t *testing.T, o waiterOutcome) {
				require.ErrorIs(t, o.err, ErrNotAcquired)
				assert.ErrorIs(t, o.err, context.Canceled)
			}, obs.WaitCancelled},
		{"an attempt's reply is lost", short, func(w *waitCase) { w.fault.dropAcquireReply.Store(true) },
			func(t *testing.T, o waiterOutcome) { assert.ErrorIs(t, o.err, ErrUnknown) }, obs.WaitUnknown},
		{"the Locker is closed", short, func(w *waitCase) { require.NoError(w.t, w.lk.Close()) },
			func(t *testing.T, o waiterOutcome) { assert.ErrorIs(t, o.err, ErrClosed) }, obs.WaitError},
		{"an attempt panics", short, func(w *waitCase) { w.panics.armed.Store(true) },
			func(t *testing.T, o waiterOutcome) { assert.Equal(t, "hook failure", o.panicked) }, obs.WaitError},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWaitCase(t)
			waiting := c.backoff
			waiting.Wait = time.Minute
			start := time.Now()
			done := startWaiter(t, w.h, with(t, w.lk, waiting), w.wctx)
			c.end(w)
			o := outcomeOf(t, done)
			elapsed := time.Since(start)
			c.check(t, o)

			assert.Equal(t, map[obs.WaitResult]uint64{c.want: 1}, waits(t, w.h), "one wait, with its result")
			assert.EqualValues(t, 0, w.h.Sum(t, obs.LeaseWaiting, lockAttrs("report")), "no longer waiting")
			_, secs := w.h.Hist(t, obs.LeaseWaitDuration, lockAttrs("report", obs.AttrResult, string(c.want)))
			assert.Positive(t, secs)
			assert.LessOrEqual(t, secs, elapsed.Seconds(), "the wait is part of the Acquire")
			if c.want == obs.WaitAcquired {
				assert.GreaterOrEqual(t, secs, 0.05, "the wait lasts until the holder's release")
			}
		})
	}
}

// waitCase is a holder of key "k" on its own Locker and client, and a
// waiter's Locker (lock name "report", recorded by h) whose client can
// lose replies or panic on demand.
type waitCase struct {
	t         *testing.T
	ctx, wctx context.Context // the test's, the waiter's
	cancel    context.CancelFunc
	h         *telemetrytest.Harness
	lk        *Locker
	holder    *Lease
	fault     *replyFault
	panics    *panicOnce
}

func newWaitCase(t *testing.T) *waitCase {
	w := &waitCase{t: t, ctx: testCtx(t), h: telemetrytest.New(t), fault: &replyFault{}, panics: &panicOnce{}}
	w.wctx, w.cancel = context.WithCancel(w.ctx)
	t.Cleanup(w.cancel)
	srv := redistest.Start(t)
	c := srv.Client(t)
	c.AddHook(w.fault)
	c.AddHook(w.panics)
	w.lk = newLocker(t, c, Config{Telemetry: w.h.Tel, Name: "report"})
	var err error
	w.holder, err = newLocker(t, srv.Client(t), Config{Namespace: w.lk.set.Namespace}).Acquire(w.ctx, "k")
	require.NoError(t, err)
	return w
}

// TestTelemetryWaitTimedOut: a wait whose bound passes with the key still
// held is recorded as timed out.
func TestTelemetryWaitTimedOut(t *testing.T) {
	w := newWaitCase(t)
	waiting := with(t, w.lk, Config{Wait: 150 * time.Millisecond})
	start := time.Now()
	_, err := waiting.Acquire(w.ctx, "k")
	elapsed := time.Since(start)
	var contended *NotAcquiredError
	require.ErrorAs(t, err, &contended)
	assert.Equal(t, map[obs.WaitResult]uint64{obs.WaitTimedOut: 1}, waits(t, w.h))
	assert.EqualValues(t, 0, w.h.Sum(t, obs.LeaseWaiting, lockAttrs("report")))
	_, secs := w.h.Hist(t, obs.LeaseWaitDuration, lockAttrs("report", obs.AttrResult, string(obs.WaitTimedOut)))
	assert.Positive(t, secs)
	assert.LessOrEqual(t, secs, elapsed.Seconds())
}

// TestTelemetryWaitDeadline: the caller's deadline ending a wait before its
// bound is a cancelled wait, not a timed-out one.
func TestTelemetryWaitDeadline(t *testing.T) {
	w := newWaitCase(t)
	dctx, cancel := context.WithTimeout(w.ctx, 300*time.Millisecond)
	defer cancel()
	_, err := with(t, w.lk, Config{Wait: time.Minute, BackoffMin: time.Minute, BackoffMax: time.Minute}).Acquire(dctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, map[obs.WaitResult]uint64{obs.WaitCancelled: 1}, waits(t, w.h))
	assert.EqualValues(t, 0, w.h.Sum(t, obs.LeaseWaiting, lockAttrs("report")))
}

// TestTelemetryNoWaitWithoutBackoff: an acquire that succeeds at once, or
// fails fast on a held key, did not wait: nothing is recorded but the
// waiting gauge's series of the lock name, at zero. The last acquire, which
// does wait, shows that a wait would have been seen.
func TestTelemetryNoWaitWithoutBackoff(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), Config{Telemetry: h.Tel, Name: "report"})

	l, err := with(t, lk, Config{Wait: 10 * time.Second}).Acquire(ctx, "k")
	require.NoError(t, err)
	_, err = lk.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.Empty(t, waits(t, h), "acquired at once and contended without a wait are no waits")
	exists, value := waitingSeries(t, h)
	assert.True(t, exists, "the gauge's series is created with the lock name")
	assert.Zero(t, value)

	_, err = with(t, lk, Config{Wait: 50 * time.Millisecond}).Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.Equal(t, map[obs.WaitResult]uint64{obs.WaitTimedOut: 1}, waits(t, h))
	require.NoError(t, l.Release(ctx))
}

// TestWaitResult: how the end of a wait is told from the acquire's result,
// its error and the caller's context, including the ends that the tests
// against Redis cannot time (an attempt dropped unsent, a deadline noticed
// before its timer fired).
func TestWaitResult(t *testing.T) {
	contended := &NotAcquiredError{Key: "k", HolderTTL: time.Second}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	for _, c := range []struct {
		name   string
		ctx    context.Context
		result obs.AcquireResult
		err    error
		want   obs.WaitResult
	}{
		{"acquired", live, obs.AcquireAcquired, nil, obs.WaitAcquired},
		{"unknown", live, obs.AcquireUnknown, &unknownError{Key: "k", Err: context.Canceled}, obs.WaitUnknown},
		{"the bound passed", live, obs.AcquireContended, contended, obs.WaitTimedOut},
		{"the bound passed, the context ended since", cancelled, obs.AcquireContended, contended, obs.WaitTimedOut},
		{"cancelled during a backoff", cancelled, obs.AcquireContended, errors.Join(contended, context.Canceled), obs.WaitCancelled},
		{"a cause of the caller's", cancelled, obs.AcquireContended, errors.Join(contended, errors.New("shutting down")), obs.WaitCancelled},
		{"the caller's deadline, before its timer", live, obs.AcquireContended, errors.Join(contended, context.DeadlineExceeded), obs.WaitCancelled},
		{"not sent within the acquire timeout", live, obs.AcquireContended, errors.Join(contended, errors.New("lease: the acquire timeout (2s) passed before the acquire could be sent")), obs.WaitError},
		{"closed", live, obs.AcquireError, ErrClosed, obs.WaitError},
		{"refused", live, obs.AcquireError, errors.New("lease: fences exhausted"), obs.WaitError},
		{"a panic after a contended answer", live, obs.AcquireContended, nil, obs.WaitError},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, waitResult(c.ctx, &acquireEvent{Result: c.result, Err: c.err}))
		})
	}
}

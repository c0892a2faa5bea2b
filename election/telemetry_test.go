package election_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// TestSignals follows one election through a hand-over and a loss: the
// leader gauge per candidate (0 from the campaign's start), the term
// changes, the newest term, the terms' lengths, the time without a leader
// measured by the next leader, losses by reason, late completions, one
// span per term that fn's context carries, Warn logs, and the lease signals
// of the election's terms under its name.
func TestSignals(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	tel := telemetrytest.New(t)
	const ttl = 500 * time.Millisecond
	h.tel = tel.Tel
	cfg := election.Config{Name: "jobs"}
	a, b := h.candidate("a", ttl, cfg), h.candidate("b", ttl, cfg)
	leader := func(who string) int64 {
		return tel.Sum(t, obs.ElectionLeader, telemetrytest.Attrs("election", "jobs", "candidate", who))
	}
	changes := func(reason string) int64 {
		return tel.Sum(t, obs.ElectionTermChanges, telemetrytest.Attrs("election", "jobs", "reason", reason))
	}
	jobs := telemetrytest.Attrs("election", "jobs")

	resign := make(chan struct{})
	spanOfA := make(chan trace.SpanContext, 1)
	doneA := run(t, ctx, a, func(ctx context.Context, _ election.Term) error {
		spanOfA <- trace.SpanContextFromContext(ctx)
		<-resign
		return nil
	})
	termA := h.waitFor("a", "started", 1, 5*time.Second)[0].fence
	var termsOfB atomic.Int64
	doneB := run(t, ctx, b, func(ctx context.Context, _ election.Term) error {
		if termsOfB.Add(1) == 1 {
			<-ctx.Done()
		}
		return nil
	})
	require.Eventually(t, func() bool { return tel.Sum(t, obs.LeaseWaiting, telemetrytest.Attrs("lock.name", "jobs")) == 1 },
		5*time.Second, 5*time.Millisecond, "b waits in the key's queue, its lease signals under the election's name")
	assert.EqualValues(t, 1, leader("a"))
	assert.Zero(t, leader("b"), "a candidate's gauge is 0 from its campaign's start")
	assert.Equal(t, termA, tel.Sum(t, obs.ElectionTerm, jobs))
	assert.EqualValues(t, 1, changes("started"))

	close(resign)
	require.NoError(t, result(t, doneA, 5*time.Second))
	termB := h.waitFor("b", "started", 1, 5*time.Second)[0].fence
	assert.Zero(t, leader("a"))
	assert.EqualValues(t, 1, leader("b"))
	assert.Equal(t, termB, tel.Sum(t, obs.ElectionTerm, jobs), "the newest term")
	assert.EqualValues(t, 2, changes("started"))
	assert.EqualValues(t, 1, changes("resigned"))
	held, _ := tel.Hist(t, obs.ElectionLeadershipDuration, jobs)
	assert.EqualValues(t, 1, held)
	gap := tel.HistPoint(t, obs.ElectionLeaderlessDuration, jobs)
	require.EqualValues(t, 1, gap.Count, "b measured the time since a's term ended")
	assert.Less(t, gap.Sum, ttl.Seconds(), "a hand-over, not an expiry")
	terms := tel.Ended(obs.SpanTerm)
	require.Len(t, terms, 1)
	assert.Equal(t, (<-spanOfA).SpanID(), terms[0].SpanContext().SpanID(), "fn's context carries the term's span")
	assert.Equal(t, termA, telemetrytest.Attr(terms[0], obs.AttrFence).AsInt64())
	assert.Equal(t, "resigned", telemetrytest.Attr(terms[0], obs.AttrReason).AsString())

	admin := h.locker(h.client(), ttl)
	info, err := admin.Inspect(ctx, h.key)
	require.NoError(t, err)
	_, err = admin.ForceRelease(ctx, h.key, info.Holder)
	require.NoError(t, err)
	stopped := h.waitFor("b", "stopped", 1, 5*time.Second)[0]
	require.Eventually(t, func() bool { return changes("lost") == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Zero(t, leader("b"))
	assert.EqualValues(t, 1, tel.Sum(t, obs.ElectionLosses, telemetrytest.Attrs("election", "jobs", "reason", "force_released")))
	late := int64(0)
	if errors.Is(stopped.reason, election.ErrLateCompletion) {
		late = 1
	}
	assert.Equal(t, late, tel.Sum(t, obs.ElectionLateCompletions, jobs), "late as the callback's reason says")
	losses := tel.Logs.All("election term lost")
	require.Len(t, losses, 1)
	assert.Equal(t, slog.LevelWarn, losses[0].Level)
	assert.Equal(t, map[string]string{"election": "jobs", "candidate": "b", "reason": "force_released"},
		pick(losses[0].Attrs, "election", "candidate", "reason"))
	assert.Len(t, tel.Logs.All("after its term may have passed on"), int(late))
	require.NoError(t, result(t, doneB, 10*time.Second), "b leads again and resigns")
	h.checkCallbacks()
}

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// A panic in the leader's function resigns the term and ends its signals:
// the gauge back to 0, the term's span ended.
func TestSignalsOfAPanickingLeader(t *testing.T) {
	h := newHarness(t)
	ctx, _ := testCtx(t)
	tel := telemetrytest.New(t)
	h.tel = tel.Tel
	a := h.candidate("a", 5*time.Second, election.Config{})
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = a.Run(ctx, func(context.Context, election.Term) error { panic("boom") })
		return nil
	}()
	assert.Equal(t, "boom", recovered)
	assert.Zero(t, tel.Sum(t, obs.ElectionLeader, telemetrytest.Attrs("election", h.key, "candidate", "a")))
	assert.EqualValues(t, 1, tel.Sum(t, obs.ElectionTermChanges, telemetrytest.Attrs("election", h.key, "reason", "resigned")))
	assert.Len(t, tel.Ended(obs.SpanTerm), 1)
}

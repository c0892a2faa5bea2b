package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runs records the runs of one scheduler's job: the ones gocron started
// (IsLeader said yes) and the fenced ones, with their term and token.
type runs struct {
	mu      sync.Mutex
	started int
	fenced  []jobRun
}

type jobRun struct {
	at         time.Time
	term       int64
	tokenFence int64 // the token in the run's context
}

func (r *runs) snapshot() (int, []jobRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started, append([]jobRun(nil), r.fenced...)
}

// scheduler is one process: a candidate of its own and a gocron scheduler
// running a job every 20ms while it leads.
type scheduler struct {
	el   *elector
	runs *runs
	stop context.CancelFunc
	done chan error
}

func startScheduler(t *testing.T, addr, name string) *scheduler {
	return startWith(t, addr, name, nil)
}

// startWith starts a scheduler whose fenced job is job, or by default one
// that records its runs.
func startWith(t *testing.T, addr, name string, job func(context.Context, election.Term)) *scheduler {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	locker := lease.NewLocker(client, lease.Config{TTL: 500 * time.Millisecond})
	t.Cleanup(func() { _ = locker.Close() })
	e, err := election.New(locker, "gocron-test", election.Config{Identity: name, Pause: 50 * time.Millisecond})
	require.NoError(t, err)
	s := &scheduler{el: &elector{e: e}, runs: &runs{}, done: make(chan error, 1)}
	if job == nil {
		job = func(ctx context.Context, term election.Term) {
			tok, _ := fence.FromContext(ctx)
			s.runs.mu.Lock()
			s.runs.fenced = append(s.runs.fenced, jobRun{at: time.Now(), term: term.Fence, tokenFence: tok.Fence})
			s.runs.mu.Unlock()
		}
	}
	cron, err := newScheduler(s.el, 20*time.Millisecond, job)
	require.NoError(t, err)
	// A second job counts every run gocron starts: IsLeader gates them all.
	_, err = cron.NewJob(gocron.DurationJob(20*time.Millisecond), gocron.NewTask(func() {
		s.runs.mu.Lock()
		s.runs.started++
		s.runs.mu.Unlock()
	}))
	require.NoError(t, err)
	cron.Start()
	t.Cleanup(func() { assert.NoError(t, cron.Shutdown()) })
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.done <- s.el.campaign(ctx) }()
	t.Cleanup(func() { cancel(); assert.NoError(t, <-s.done) })
	return s
}

// TestOnlyTheLeaderRuns runs two schedulers on a real redis-server: while
// the first leads, the second's jobs never run, and the first's run in
// its term with its token; once the first resigns, the second is elected
// and its jobs run in a newer term, after the first's last run.
func TestOnlyTheLeaderRuns(t *testing.T) {
	addr := redistest.Start(t).Addr()
	a := startScheduler(t, addr, "a")
	require.Eventually(t, func() bool { _, ok := a.el.e.Leading(); return ok }, 5*time.Second, 5*time.Millisecond)
	aTerm, _ := a.el.e.Leading()
	b := startScheduler(t, addr, "b")
	time.Sleep(300 * time.Millisecond) // some 15 runs due on each

	bStarted, bFenced := b.runs.snapshot()
	assert.Zero(t, bStarted, "the second scheduler ran a job while the first led")
	assert.Empty(t, bFenced)
	aStarted, aFenced := a.runs.snapshot()
	assert.Positive(t, aStarted)
	require.NotEmpty(t, aFenced)
	for _, r := range aFenced {
		assert.Equal(t, aTerm.Fence, r.term)
		assert.Equal(t, aTerm.Fence, r.tokenFence, "the run's context carries the term's token")
	}

	a.stop() // resigns: the second is elected at once
	require.NoError(t, <-a.done)
	a.done <- nil // for the cleanup
	_, aFenced = a.runs.snapshot()
	require.Eventually(t, func() bool { _, f := b.runs.snapshot(); return len(f) > 0 }, 5*time.Second, 5*time.Millisecond)
	_, bFenced = b.runs.snapshot()
	assert.Greater(t, bFenced[0].term, aTerm.Fence, "a newer term")
	assert.True(t, aFenced[len(aFenced)-1].at.Before(bFenced[0].at), "the first's last run before the second's first")
	_, after := a.runs.snapshot()
	assert.Len(t, after, len(aFenced), "the first ran after it resigned")
}

// TestARunEndsWithItsTerm takes a leader's key by force while its job
// runs: the job's context, which gocron's alone would not end, ends with
// the term's loss.
func TestARunEndsWithItsTerm(t *testing.T) {
	srv := redistest.Start(t)
	causes := make(chan error, 1)
	a := startWith(t, srv.Addr(), "a", func(ctx context.Context, _ election.Term) {
		<-ctx.Done()
		select {
		case causes <- context.Cause(ctx):
		default:
		}
	})
	require.Eventually(t, func() bool { _, ok := a.el.e.Leading(); return ok }, 5*time.Second, 5*time.Millisecond)

	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	operator := lease.NewLocker(client, lease.Config{})
	defer operator.Close()
	ctx := context.Background()
	seen, err := operator.Inspect(ctx, "gocron-test")
	require.NoError(t, err)
	_, err = operator.ForceRelease(ctx, "gocron-test", seen.Holder)
	require.NoError(t, err)

	select {
	case cause := <-causes:
		var lost *lease.LostError
		require.ErrorAs(t, cause, &lost)
		assert.Equal(t, "force_released", string(lost.Reason))
	case <-time.After(5 * time.Second):
		t.Fatal("the running job's context did not end with its term")
	}
}

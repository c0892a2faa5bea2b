// Command gocron runs a github.com/go-co-op/gocron/v2 scheduler whose jobs
// run only on the leader of a lockwatch election: the election is the
// scheduler's Elector (gocron.WithDistributedElector).
//
//	go run ./examples/gocron -redis 127.0.0.1:6379
//
// Start it twice: one process leads and runs the job every -every, the
// other skips every run until the leader stops (Ctrl-C resigns its term,
// and the other is elected at once) or dies (it is elected once the
// leader's key expires).
//
// # What carries over, and what does not
//
// gocron asks Elector.IsLeader(ctx) once, when a run is due, and runs the
// job if it returns nil. Here IsLeader is election.Leading: nil while this
// candidate's term is live, which its lease ends before the key can
// expire. So two schedulers never pass the check at the same moment, and
// a new leader is elected promptly after a resignation or an expiry.
//
// gocron gives the job neither the term's context nor its fencing token:
// its context is the job's own, which ends at the scheduler's shutdown,
// not at the term's loss. A run that passed the check keeps running after
// its term is lost, and may overlap the next leader's runs; and without a
// token, the resource it writes cannot tell a deposed leader's write from
// the leader's. Nor does resigning wait for a run under way: the election
// awaits its own function, not gocron's jobs.
//
// The better way, shown here: the job asks the elector for the term as it
// starts (elector.Term), does nothing if there is none, and works on a
// context that ends with the term, carrying the term's token for the
// resource (fence.NewContext; middleware.RoundTripper sends it as the
// Fencing-Token header). A run still under way when its term is lost is
// then cancelled, and its late writes are the resource's fence's to
// refuse: what examples/singleton shows with PostgreSQL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address (host:port)")
	key := flag.String("key", "gocron-scheduler", "the election's key")
	every := flag.Duration("every", time.Second, "how often the job is due")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *addr, *key, *every)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocron:", err)
		os.Exit(1)
	}
}

// run campaigns for key and schedules the job until ctx ends, which
// resigns a term it leads.
func run(ctx context.Context, addr, key string, every time.Duration) error {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	e, err := election.New(locker, key, election.Config{})
	if err != nil {
		return err
	}
	el := &elector{e: e}
	s, err := newScheduler(el, every, func(ctx context.Context, t election.Term) {
		fmt.Printf("%s: the job runs in term %d\n", time.Now().Format(time.TimeOnly), t.Fence)
	})
	if err != nil {
		return err
	}
	s.Start()
	err = el.campaign(ctx)
	return errors.Join(err, s.Shutdown())
}

// newScheduler returns a scheduler whose one job, every every, runs job
// through el.fenced, and only while el leads.
func newScheduler(el *elector, every time.Duration, job func(context.Context, election.Term)) (gocron.Scheduler, error) {
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(el))
	if err != nil {
		return nil, err
	}
	if _, err := s.NewJob(gocron.DurationJob(every), gocron.NewTask(el.fenced(job))); err != nil {
		return nil, errors.Join(err, s.Shutdown())
	}
	return s, nil
}

// errNotLeader is IsLeader's answer to a candidate that does not lead.
var errNotLeader = errors.New("not the leader")

// elector is an election as gocron's Elector, which also tells a job the
// term it runs in.
type elector struct {
	e *election.Election

	mu   sync.Mutex
	term election.Term
	ctx  context.Context // the term's; nil between terms
}

// campaign runs the election until ctx ends. While this candidate leads,
// the term and its context are what IsLeader and Term read; the term is
// resigned when ctx ends.
func (el *elector) campaign(ctx context.Context) error {
	err := el.e.Run(ctx, func(ctx context.Context, t election.Term) error {
		el.set(t, ctx)
		defer el.set(election.Term{}, nil)
		<-ctx.Done() // the term lasts until it is lost or ctx ends
		return nil
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (el *elector) set(t election.Term, ctx context.Context) {
	el.mu.Lock()
	el.term, el.ctx = t, ctx
	el.mu.Unlock()
}

// IsLeader implements gocron.Elector: nil while this candidate leads a
// live term (election.Leading).
func (el *elector) IsLeader(context.Context) error {
	if _, ok := el.e.Leading(); !ok {
		return errNotLeader
	}
	return nil
}

// Term returns the live term this candidate leads and the term's context,
// which ends when the term does; false between terms.
func (el *elector) Term() (election.Term, context.Context, bool) {
	el.mu.Lock()
	defer el.mu.Unlock()
	if el.ctx == nil || el.ctx.Err() != nil {
		return election.Term{}, nil, false
	}
	return el.term, el.ctx, true
}

// fenced makes job a gocron task that runs only in a live term, on a
// context that ends with the term (or gocron's job context) and carries
// the term's token (fence.FromContext).
func (el *elector) fenced(job func(context.Context, election.Term)) func(context.Context) {
	return func(jobCtx context.Context) {
		t, termCtx, ok := el.Term()
		if !ok {
			return // the term ended after gocron's check
		}
		ctx, cancel := context.WithCancelCause(fence.NewContext(jobCtx, t.Token))
		defer cancel(nil)
		stop := context.AfterFunc(termCtx, func() { cancel(context.Cause(termCtx)) })
		defer stop()
		job(ctx, t)
	}
}

package failover

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
)

// A candidate's protocol. It writes, one per line:
//
//	campaign                  it starts to campaign
//	lead <term>               its leader's function starts (lockwatch:
//	                          the term's fence; etcd: the leader key's
//	                          creation revision)
//	ended <term> <resumed> <refused>
//	                          its work loop ended (see steps)
//	stopped <term> <late> <reason>
//	                          its term ended (late: lockwatch's late
//	                          completion)
//
// and reads "resign" lines: the leader resigns.
const (
	// workStep is how often a leader does a step of work: it checks its term
	// is live first, as a leader's work loop does.
	workStep = 10 * time.Millisecond
	// pauseGap: a step this long after the one before follows a pause.
	pauseGap = termTTL / 2
	etcdKey  = "/failover/leader"
	lwKey    = "failover"
)

// steps is what a leader's work loop did in its term: resumed steps were
// taken live after a pause (work done by a deposed leader), and refused of
// those would have been refused by a check of the term's validity
// (lockwatch: Lease.Err; etcd has none locally).
type steps struct {
	resumed, refused int
	resign           bool
}

// resigns carries the parent's "resign" lines to the leader's loop.
func resigns() <-chan struct{} {
	ch := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "resign" {
				ch <- struct{}{}
			}
		}
		os.Exit(0) // the parent is gone
	}()
	return ch
}

// work takes a step every workStep while live says the term is, until done
// closes or a resign comes.
func work(done <-chan struct{}, live, refused func() bool, resign <-chan struct{}) steps {
	tick := time.NewTicker(workStep)
	defer tick.Stop()
	var s steps
	last, paused := time.Now(), false
	for {
		select {
		case <-done:
			return s
		case <-resign:
			s.resign = true
			return s
		case <-tick.C:
		}
		now := time.Now()
		paused = paused || now.Sub(last) > pauseGap
		last = now
		if !live() {
			return s
		}
		if paused {
			s.resumed++
			if refused() {
				s.refused++
			}
		}
	}
}

func boolDigit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lockwatchCandidate campaigns with election.Run on the redis-server at
// addr: lease TTL termTTL, every other setting at its default (Pause 1 s,
// the Locker's BackoffMax 500 ms, SafetyMargin TTL/10), telemetry off.
func lockwatchCandidate(addr, id string) error {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	tel := telemetry.New(telemetry.Config{MeterProvider: metricnoop.NewMeterProvider(),
		TracerProvider: tracenoop.NewTracerProvider(), Logger: slog.New(slog.DiscardHandler)})
	lk := lease.NewLocker(client, lease.Config{TTL: termTTL, Telemetry: tel})
	e, err := election.New(lk, lwKey, election.Config{Identity: id,
		OnStoppedLeading: func(t election.Term, reason error) {
			emit("stopped %d %d %v", t.Fence, boolDigit(errors.Is(reason, election.ErrLateCompletion)), reason)
		}})
	if err != nil {
		return err
	}
	resign := resigns()
	for {
		emit("campaign")
		err := e.Run(context.Background(), func(ctx context.Context, t election.Term) error {
			emit("lead %d", t.Fence)
			l := lease.FromContext(ctx)
			s := work(ctx.Done(), func() bool { return ctx.Err() == nil },
				func() bool { return l != nil && l.Err() != nil }, resign)
			emit("ended %d %d %d", t.Fence, s.resumed, s.refused)
			return nil // resigned, or the term is over: Run goes on
		})
		if err != nil {
			return err
		}
	}
}

// etcdCandidate campaigns with concurrency.Election on the etcd server at
// endpoint: a session of TTL etcdTTL, renewed by the client's keep-alive
// (every TTL/3); a leader works until its session's Done closes, and
// campaigns again on a new session.
func etcdCandidate(endpoint, id string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	resign := resigns()
	for {
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(etcdTTL))
		if err != nil {
			return err
		}
		if err := etcdTerms(sess, id, resign); err != nil {
			return err
		}
		_ = sess.Close()
	}
}

// etcdTerms campaigns on sess until it ends.
func etcdTerms(sess *concurrency.Session, id string, resign <-chan struct{}) error {
	ctx := context.Background()
	for {
		e := concurrency.NewElection(sess, etcdKey)
		emit("campaign")
		if err := e.Campaign(ctx, id); err != nil {
			return err
		}
		rev := e.Rev()
		emit("lead %d", rev)
		live := func() bool {
			select {
			case <-sess.Done():
				return false
			default:
				return true
			}
		}
		s := work(sess.Done(), live, func() bool { return false }, resign)
		emit("ended %d %d 0", rev, s.resumed)
		if s.resign {
			err := e.Resign(ctx)
			emit("stopped %d 0 resigned (%v)", rev, err)
			continue
		}
		emit("stopped %d 0 session done", rev)
		return nil
	}
}

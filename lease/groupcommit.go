package lease

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// groupCommit sends the acquires and releases of one Locker in shared
// pipelines, so that many requests locking at once cost Redis (and the
// client) a few round trips rather than one each, while a lone request pays
// nothing for it:
//
//   - fewer than maxInFlight pipelines in flight: the caller sends its own
//     call at once, on its own goroutine (no hand-off, no timer, no added
//     latency);
//   - otherwise the call queues; when a pipeline's replies are in, every
//     queued call leaves together in the next pipeline, sent by the first
//     queued caller (who is waiting anyway), so there is no goroutine of its
//     own.
//
// maxInFlight is 2, not 1: a request's acquire must not wait behind the
// background release of the request before it (ReleaseAsync), and while one
// pipeline is on the wire the next one fills.
//
// This is group commit as databases do it for their log: the batch size
// adapts to the load, because the batch is whatever arrived during one round
// trip. Renewals do not go through it: the scheduler already batches them,
// and a stalled acquire must never delay a renewal.
//
// A pipeline's deadline is the earliest of its calls' deadlines (a call only
// ever gets less time than it asked for, which makes it unknown, never
// wrong). Calls whose deadline passed while they queued are not sent.
type groupCommit struct {
	client    redis.UniversalClient
	deadlines deadlines
	mu        sync.Mutex
	inFlight  int     // pipelines in flight, at most maxInFlight
	queue     []*call // waiting for the next pipeline
}

const maxInFlight = 2

// call is one script call through groupCommit.
type call struct {
	scriptCall
	ctx      context.Context // the caller's: values (traces) for go-redis hooks
	deadline time.Duration   // instant after which its reply is useless
	bound    deadlineCtx     // the round trip's context, when this call leads a pipeline

	// Set before ready is signalled (or before do returns to the leader).
	cmd    *redis.Cmd
	sentAt time.Duration // when its pipeline was sent; 0 when never sent

	ready chan struct{} // signalled once: answered, or lead is set
	lead  []*call       // guarded by groupCommit.mu: the batch this caller must send
	self  [1]*call      // a batch of this call alone, without an allocation
}

// callOutcome says what became of a call.
type callOutcome int

const (
	callAnswered  callOutcome = iota // cmd holds its reply (or its error)
	callNotSent                      // withdrawn or expired before any pipeline took it
	callAbandoned                    // in flight when ctx ended: it may have run
)

// do runs c in the next shared pipeline. ctx bounds the wait: a call still
// queued when it ends is withdrawn (never sent); one already in flight is
// abandoned (its reply is not awaited by do; settled waits for it).
func (g *groupCommit) do(ctx context.Context, c *call) callOutcome {
	c.self[0] = c
	g.mu.Lock()
	if g.inFlight < maxInFlight {
		g.inFlight++
		g.mu.Unlock()
		return g.send(c.self[:])
	}
	c.ready = make(chan struct{}, 1)
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, c); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			return callNotSent
		}
		leading := c.lead != nil
		g.mu.Unlock()
		if !leading {
			select {
			case <-c.ready: // answered after all
			default:
				return callAbandoned
			}
		} else {
			<-c.ready
		}
	}
	if c.lead != nil { // written before ready was signalled
		return g.send(c.lead)
	}
	if c.sentAt == 0 {
		return callNotSent
	}
	return callAnswered
}

// send sends batch (whose first call is the caller's own) as one pipeline,
// hands the calls queued meanwhile to the first of their callers, and
// answers the rest. It returns the outcome of the caller's own call.
func (g *groupCommit) send(batch []*call) callOutcome {
	t := now()
	live := batch
	deadline := t + time.Hour
	for _, c := range batch {
		deadline = min(deadline, c.deadline)
	}
	if deadline <= t { // some expired in the queue: send the others
		live, deadline = nil, t+time.Hour
		for _, c := range batch {
			if c.deadline > t {
				live = append(live, c)
				deadline = min(deadline, c.deadline)
			}
		}
	}
	if len(live) > 0 {
		// The first caller's values (traces) for go-redis hooks; no
		// caller's cancellation: one caller giving up must not fail the
		// others, and the deadline bounds the round trip.
		ctx := g.deadlines.bound(&live[0].bound, live[0].ctx, wallTime(deadline))
		sentAt := now()
		if len(live) == 1 {
			live[0].cmd = runOne(ctx, g.client, live[0].scriptCall)
		} else {
			calls := make([]scriptCall, len(live))
			for i, c := range live {
				calls[i] = c.scriptCall
			}
			for i, cmd := range runPipelined(ctx, g.client, calls) {
				live[i].cmd = cmd
			}
		}
		for _, c := range live {
			c.sentAt = sentAt
		}
	}

	g.mu.Lock()
	next := g.queue
	g.queue = nil
	if len(next) == 0 {
		g.inFlight--
	} else {
		next[0].lead = next
	}
	g.mu.Unlock()
	if len(next) > 0 {
		next[0].ready <- struct{}{}
	}
	for _, c := range batch[1:] {
		c.ready <- struct{}{}
	}
	if batch[0].sentAt == 0 {
		return callNotSent
	}
	return callAnswered
}

// settled waits until an abandoned call's pipeline is over (its reply or its
// error is in), so that a clean-up sent next cannot overtake it on another
// connection. The pipeline's deadline bounds the wait.
func (c *call) settled() { <-c.ready }

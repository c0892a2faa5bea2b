package lease

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// groupCommit sends the acquires and releases of one Locker (on Cluster: of
// one master) in shared pipelines, so that many requests locking at once
// cost Redis (and the client) a few round trips rather than one each, while
// a lone request pays nothing for it:
//
//   - fewer than maxInFlight pipelines in flight: the caller sends its own
//     call at once, on its own goroutine (no hand-off, no timer, no added
//     latency);
//   - otherwise the call queues; when a pipeline's replies are in, the
//     queued calls (up to maxBatch) leave together in the next pipeline,
//     sent by the first queued caller (who is waiting anyway), so there is
//     no goroutine of its own.
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
// No call gets less time than it asked for: a pipeline's deadline is the
// latest of its calls' deadlines (a caller with a near deadline must not
// turn its neighbours' calls unknown). Each caller waits only until its own
// deadline or its context's end: a call still queued then is withdrawn
// (never sent), one in another caller's pipeline is abandoned (ErrUnknown
// for an acquire). The caller sending a pipeline waits for it, up to the
// pipeline's deadline.
type groupCommit struct {
	client    redis.UniversalClient
	deadlines *deadlines
	lanes     *lanes // runs the pipelines a leader may stop waiting for
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
	sent   bool          // it may have reached Redis
	sentAt time.Duration // when its pipeline was sent

	ready chan struct{} // signalled once: answered, or lead is set
	lead  []*call       // guarded by groupCommit.mu: the batch this caller must send
	self  [1]*call      // a batch of this call alone, without an allocation
}

// callOutcome says what became of a call.
type callOutcome int

const (
	callAnswered  callOutcome = iota // cmd holds its reply (or its error)
	callNotSent                      // withdrawn or expired before any pipeline took it
	callAbandoned                    // in flight when the caller stopped waiting: it may have run
)

// do runs c in the next shared pipeline; see groupCommit for how long it
// waits.
func (g *groupCommit) do(ctx context.Context, c *call) callOutcome {
	c.self[0] = c
	g.mu.Lock()
	if g.inFlight < maxInFlight {
		g.inFlight++
		g.mu.Unlock()
		return g.send(ctx, c.self[:])
	}
	c.ready = make(chan struct{}, 1)
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		if out, done := g.stopWaiting(c); done {
			return out
		}
	case <-g.deadlines.done(wallTime(c.deadline)):
		if out, done := g.stopWaiting(c); done {
			return out
		}
	}
	if c.lead != nil { // written before ready was signalled
		return g.send(ctx, c.lead)
	}
	return c.outcome()
}

// stopWaiting withdraws a queued call or abandons one in flight. A call
// that was just made leader cannot stop: it waits for its ready signal and
// sends (done is false).
func (g *groupCommit) stopWaiting(c *call) (out callOutcome, done bool) {
	g.mu.Lock()
	if i := slices.Index(g.queue, c); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		g.mu.Unlock()
		return callNotSent, true
	}
	leading := c.lead != nil
	g.mu.Unlock()
	if leading {
		<-c.ready
		return 0, false
	}
	select {
	case <-c.ready: // answered after all
		return 0, false
	default:
		return callAbandoned, true
	}
}

// errSendPanicked answers the calls of a pipeline whose send panicked (in a
// go-redis hook, say): they may have been sent.
var errSendPanicked = errors.New("lease: sending the pipeline panicked")

// send sends batch (whose first call is the caller's own) as one pipeline,
// hands the calls queued meanwhile to the first of their callers, and
// answers the rest, also when sending panics: no caller may wait forever.
// It returns the outcome of the caller's own call.
//
// The pipeline waits up to the latest deadline among its calls. When a
// neighbour's is later than the caller's own (a release queued behind an
// acquire, say), the pipeline goes on a goroutine of its own, so that the
// caller stops waiting at its own deadline or when its context ends, like
// every other caller; its call is then abandoned (it may have run).
func (g *groupCommit) send(ctx context.Context, batch []*call) callOutcome {
	own := batch[0]
	inline := func() callOutcome {
		defer g.handOff(batch)
		g.exec(batch)
		return own.outcome()
	}
	if !slices.ContainsFunc(batch[1:], func(c *call) bool { return c.deadline > own.deadline }) {
		return inline()
	}
	// Made leader after its own deadline: exec, which reads the clock
	// later, drops the call unsent.
	late := own.deadline <= now()
	done := make(chan struct{})
	var panicked any // set before done is closed
	if !g.lanes.detach(func() {
		defer close(done)
		defer func() { panicked = recover() }() // the calls are answered (handOff); the leader, if still there, re-panics
		defer g.handOff(batch)
		g.exec(batch)
	}) {
		return inline() // Close has begun: nothing may outlive its wait
	}
	if late {
		return callNotSent
	}
	select {
	case <-done:
	case <-ctx.Done():
	case <-g.deadlines.done(wallTime(own.deadline)):
	}
	select {
	case <-done:
		if panicked != nil {
			panic(panicked)
		}
		return own.outcome()
	default:
		own.ready = done // settled waits for the pipeline
		return callAbandoned
	}
}

// outcome is what became of a call whose pipeline is over.
func (c *call) outcome() callOutcome {
	if !c.sent {
		return callNotSent
	}
	return callAnswered
}

func (g *groupCommit) exec(batch []*call) {
	t := now()
	live := batch
	if slices.ContainsFunc(batch, func(c *call) bool { return c.deadline <= t }) {
		live = slices.DeleteFunc(slices.Clone(batch), func(c *call) bool { return c.deadline <= t })
	}
	if len(live) == 0 {
		return
	}
	deadline := live[0].deadline
	for _, c := range live[1:] {
		deadline = max(deadline, c.deadline)
	}
	// A lone call keeps its caller's values (traces, for go-redis hooks); a
	// shared pipeline carries no one request's. No caller's cancellation
	// either way: the deadline bounds the round trip.
	ctx := context.Background()
	if len(live) == 1 && live[0] == batch[0] {
		ctx = live[0].ctx
	}
	ctx = g.deadlines.bound(&live[0].bound, ctx, wallTime(deadline))
	sentAt := now()
	for _, c := range live {
		c.sent, c.sentAt = true, sentAt
	}
	if len(live) == 1 {
		live[0].cmd = runOne(ctx, g.client, live[0].scriptCall)
		return
	}
	calls := make([]scriptCall, len(live))
	for i, c := range live {
		calls[i] = c.scriptCall
	}
	for i, cmd := range runPipelined(ctx, g.client, calls) {
		live[i].cmd = cmd
	}
}

func (g *groupCommit) handOff(batch []*call) {
	for _, c := range batch {
		if c.sent && c.cmd == nil { // exec panicked
			c.cmd = redis.NewCmd(context.Background())
			c.cmd.SetErr(errSendPanicked)
		}
	}
	g.mu.Lock()
	next := g.queue
	if len(next) > maxBatch {
		next, g.queue = next[:maxBatch:maxBatch], slices.Clone(next[maxBatch:])
	} else {
		g.queue = nil
	}
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
}

// settled waits until an abandoned call's pipeline is over (its reply or its
// error is in), so that a clean-up sent next cannot overtake it on another
// connection. The pipeline's deadline bounds the wait. (A follower's ready
// is signalled by handOff; an abandoned leader's is closed by send.)
func (c *call) settled() { <-c.ready }

// lanes gives each lock key its group commit: the Locker's one, or on
// Cluster the one of the key's master, so that a slow or failing-over master
// holds up only the calls for its own keys (a Cluster pipeline waits for
// every node it touches).
type lanes struct {
	client    redis.UniversalClient
	cluster   *redis.ClusterClient // nil unless client is one
	deadlines deadlines
	closing   bool           // guarded by mu
	detached  sync.WaitGroup // pipelines on goroutines of their own (detach); Close waits for them
	one       *groupCommit   // a single node or Sentinel; on Cluster, keys whose master is unknown
	mu        sync.Mutex
	byMaster  map[string]*groupCommit // on Cluster, by master address
}

func newLanes(client redis.UniversalClient) *lanes {
	ls := &lanes{client: client}
	ls.cluster, _ = client.(*redis.ClusterClient)
	ls.one = &groupCommit{client: client, deadlines: &ls.deadlines, lanes: ls}
	return ls
}

func (ls *lanes) forKey(ctx context.Context, lockKey string) *groupCommit {
	if ls.cluster == nil {
		return ls.one
	}
	node, err := ls.cluster.MasterForKey(ctx, lockKey) // from the cached slot map
	if err != nil {
		return ls.one
	}
	addr := node.Options().Addr
	ls.mu.Lock()
	defer ls.mu.Unlock()
	g := ls.byMaster[addr]
	if g == nil {
		if ls.byMaster == nil {
			ls.byMaster = make(map[string]*groupCommit)
		}
		g = &groupCommit{client: ls.client, deadlines: &ls.deadlines, lanes: ls}
		ls.byMaster[addr] = g
	}
	return g
}

// detach runs f on a goroutine of its own that close waits for, and reports
// false, running nothing, once close has begun.
func (ls *lanes) detach(f func()) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closing {
		return false
	}
	ls.detached.Add(1)
	go func() {
		defer ls.detached.Done()
		f()
	}()
	return true
}

// close waits for the detached pipelines; none starts after it began.
func (ls *lanes) close() {
	ls.mu.Lock()
	ls.closing = true
	ls.mu.Unlock()
	ls.detached.Wait()
}

package groupcommit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/script"
)

// Lane sends the acquires and releases of one Locker (on Cluster: of one
// master) in shared pipelines, as the package doc says.
//
// No call gets less time than it asked for: a pipeline's deadline is the
// latest of its calls' deadlines (a caller with a near deadline must not
// turn its neighbours' calls unknown). Each caller waits only until its own
// deadline or its context's end: a call still queued then is withdrawn
// (never sent), one in another caller's pipeline is abandoned
// (lease.ErrUnknown for an acquire). The caller sending a pipeline waits for
// it, up to the pipeline's deadline.
type Lane struct {
	client    redis.UniversalClient
	deadlines *deadlines
	lanes     *Lanes // runs the pipelines a leader may stop waiting for
	mu        sync.Mutex
	inFlight  int     // pipelines in flight, at most MaxInFlight
	queue     []*Call // waiting for the next pipeline
}

// MaxInFlight is how many pipelines a Lane has in flight at most: 2, not 1,
// so that a request's acquire does not wait behind the background release of
// the request before it (Lease.ReleaseAsync), and the next pipeline fills
// while one is on the wire.
const MaxInFlight = 2

// inlineSlack is how far past its own deadline the caller that sends a
// pipeline may wait for it, so that its neighbours get all the time they
// asked for. The calls that queued behind it asked for the same timeout
// microseconds later, so their deadlines are later than its own by about
// one round trip: without the slack nearly every shared pipeline would go
// on a goroutine of its own (a spawn, a channel and a wake-up per
// pipeline). A millisecond is more than a loopback round trip and small
// beside lease's default timeouts (TTL/5, 2 s). A reply that comes in the
// slack is late for the caller's own call (for an acquire: unknown), as
// any reply after its deadline.
const inlineSlack = time.Millisecond

// Call is one script call through a Lane. The caller sets Script, Ctx and
// Deadline; Do sets the rest.
type Call struct {
	Script   script.Call
	Ctx      context.Context // the caller's: values (traces) for go-redis hooks
	Deadline time.Duration   // instant (package clock) after which its reply is useless
	bound    deadlineCtx     // the round trip's context, when this call leads a pipeline

	// Set before ready is signalled (or before Do returns to the leader).
	cmd    *redis.Cmd
	sent   bool          // it may have reached Redis
	sentAt time.Duration // when its pipeline was sent

	ready chan struct{} // signalled once: answered, or lead is set
	lead  []*Call       // guarded by Lane.mu: the batch this caller must send
	self  [1]*Call      // a batch of this call alone, without an allocation
}

// Cmd is the call's command, holding its reply (or its error), once Do has
// answered it.
func (c *Call) Cmd() *redis.Cmd { return c.cmd }

// SentAt is the instant the call's pipeline was sent.
func (c *Call) SentAt() time.Duration { return c.sentAt }

// Outcome says what became of a call.
type Outcome int

const (
	Answered  Outcome = iota // Cmd holds its reply (or its error)
	NotSent                  // withdrawn or expired before any pipeline took it
	Abandoned                // in flight when the caller stopped waiting: it may have run
)

// Load returns the pipelines in flight and the calls queued behind them.
func (g *Lane) Load() (inFlight, queued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, len(g.queue)
}

// Do runs c in the next shared pipeline; see Lane for how long it waits.
func (g *Lane) Do(ctx context.Context, c *Call) Outcome {
	c.self[0] = c
	g.mu.Lock()
	if g.inFlight < MaxInFlight {
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
	case <-g.deadlines.done(clock.WallTime(c.Deadline)):
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
func (g *Lane) stopWaiting(c *Call) (out Outcome, done bool) {
	g.mu.Lock()
	if i := slices.Index(g.queue, c); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		g.mu.Unlock()
		return NotSent, true
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
		return Abandoned, true
	}
}

// errSendPanicked answers the calls of a pipeline whose send panicked (in a
// go-redis hook, say): they may have been sent. It reaches lease's callers
// as the error of their acquire or release, so it speaks as lease.
var errSendPanicked = errors.New("lease: sending the pipeline panicked")

// send sends batch (whose first call is the caller's own) as one pipeline,
// hands the calls queued meanwhile to the first of their callers, and
// answers the rest, also when sending panics: no caller may wait forever.
// It returns the outcome of the caller's own call.
//
// The pipeline waits up to the latest deadline among its calls. When a
// neighbour's is later than the caller's own by more than inlineSlack (an
// acquire with a near deadline of its caller's, leading releases that may
// take seconds), the pipeline goes on a goroutine of its own, so that the
// caller stops waiting at its own deadline or when its context ends, like
// every other caller; its call is then abandoned (it may have run).
func (g *Lane) send(ctx context.Context, batch []*Call) Outcome {
	own := batch[0]
	inline := func() Outcome {
		defer g.handOff(batch)
		g.exec(batch)
		return own.outcome()
	}
	if !slices.ContainsFunc(batch[1:], func(c *Call) bool { return c.Deadline > own.Deadline+inlineSlack }) {
		return inline()
	}
	// Made leader after its own deadline: exec, which reads the clock
	// later, drops the call unsent.
	late := own.Deadline <= clock.Now()
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
		return NotSent
	}
	select {
	case <-done:
	case <-ctx.Done():
	case <-g.deadlines.done(clock.WallTime(own.Deadline)):
	}
	select {
	case <-done:
		if panicked != nil {
			panic(panicked)
		}
		return own.outcome()
	default:
		own.ready = done // Settled waits for the pipeline
		return Abandoned
	}
}

// outcome is what became of a call whose pipeline is over.
func (c *Call) outcome() Outcome {
	if !c.sent {
		return NotSent
	}
	return Answered
}

func (g *Lane) exec(batch []*Call) {
	t := clock.Now()
	live := batch
	if slices.ContainsFunc(batch, func(c *Call) bool { return c.Deadline <= t }) {
		live = slices.DeleteFunc(slices.Clone(batch), func(c *Call) bool { return c.Deadline <= t })
	}
	if len(live) == 0 {
		return
	}
	deadline := live[0].Deadline
	for _, c := range live[1:] {
		deadline = max(deadline, c.Deadline)
	}
	// A lone call keeps its caller's values (traces, for go-redis hooks); a
	// shared pipeline carries no one request's. No caller's cancellation
	// either way: the deadline bounds the round trip.
	ctx := context.Background()
	if len(live) == 1 && live[0] == batch[0] {
		ctx = live[0].Ctx
	}
	ctx = g.deadlines.bound(&live[0].bound, ctx, clock.WallTime(deadline))
	sentAt := clock.Now()
	for _, c := range live {
		c.sent, c.sentAt = true, sentAt
	}
	if len(live) == 1 {
		live[0].cmd = script.RunOne(ctx, g.client, live[0].Script)
		return
	}
	calls := make([]script.Call, len(live))
	for i, c := range live {
		calls[i] = c.Script
	}
	for i, cmd := range script.RunPipelined(ctx, g.client, calls) {
		live[i].cmd = cmd
	}
}

func (g *Lane) handOff(batch []*Call) {
	for _, c := range batch {
		if c.sent && c.cmd == nil { // exec panicked
			c.cmd = redis.NewCmd(context.Background())
			c.cmd.SetErr(errSendPanicked)
		}
	}
	g.mu.Lock()
	next := g.queue
	if maxBatch := g.lanes.maxBatch; len(next) > maxBatch {
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

// Settled waits until an abandoned call's pipeline is over (its reply or its
// error is in), so that a clean-up sent next cannot overtake it on another
// connection. The pipeline's deadline bounds the wait. (A follower's ready
// is signalled by handOff; an abandoned leader's is closed by send.)
func (c *Call) Settled() { <-c.ready }

// Lanes gives each lock key its group commit (Lane): the Locker's one, or on
// Cluster the one of the key's master, so that a slow or failing-over master
// holds up only the calls for its own keys (a Cluster pipeline waits for
// every node it touches).
type Lanes struct {
	client    redis.UniversalClient
	cluster   *redis.ClusterClient // nil unless client is one
	maxBatch  int                  // calls in one shared pipeline, at most
	deadlines deadlines
	closing   bool           // guarded by mu
	detached  sync.WaitGroup // pipelines on goroutines of their own (detach); Close waits for them
	one       *Lane          // a single node or Sentinel; on Cluster, keys whose master is unknown
	mu        sync.Mutex
	byMaster  map[string]*Lane // on Cluster, by master address
}

// NewLanes returns the lanes of client, whose shared pipelines carry at most
// maxBatch calls each.
func NewLanes(client redis.UniversalClient, maxBatch int) *Lanes {
	ls := &Lanes{client: client, maxBatch: maxBatch}
	ls.cluster, _ = client.(*redis.ClusterClient)
	ls.one = &Lane{client: client, deadlines: &ls.deadlines, lanes: ls}
	return ls
}

// ForKey returns the lane of lockKey.
func (ls *Lanes) ForKey(ctx context.Context, lockKey string) *Lane {
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
			ls.byMaster = make(map[string]*Lane)
		}
		g = &Lane{client: ls.client, deadlines: &ls.deadlines, lanes: ls}
		ls.byMaster[addr] = g
	}
	return g
}

// detach runs f on a goroutine of its own that Close waits for, and reports
// false, running nothing, once Close has begun.
func (ls *Lanes) detach(f func()) bool {
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

// Close waits for the detached pipelines; none starts after it began.
func (ls *Lanes) Close() {
	ls.mu.Lock()
	ls.closing = true
	ls.mu.Unlock()
	ls.detached.Wait()
}

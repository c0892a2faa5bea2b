package lease

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// wakeups brings a Locker's queued waiters (Config.Wait) their grants: a
// release, or any script that finds the key free, hands the key to the
// first live entry of its wait queue and publishes "<owner> <fence>" on
// the key's release channel (leasekeys.Keys), and the waiter whose attempt
// has that owner token holds the lease without another round trip.
//
// One Pub/Sub connection per Locker (shared with the Lockers derived from
// it), opened with the first wait, subscribes to the channels its waiters
// wait on; a goroutine sends SUBSCRIBE and UNSUBSCRIBE in the order
// decided, so subscribing never holds up a waiter. Grants need a
// *redis.Client or *redis.ClusterClient and, under a channel-restricting
// ACL, &<namespace>:*. A message can be missed (a reconnect, a failover, a
// grant before the subscription): the waiter's refresh of its entry
// (queue.go) learns the grant all the same.
type wakeups struct {
	client redis.UniversalClient // nil: grants are not listened for

	mu      sync.Mutex
	ps      *redis.PubSub // nil until the first wait
	lines   map[string]*waitLine
	pending []subscription // for the writer, in the order decided
	kick    chan struct{}  // tells the writer of pending (buffered)
	closed  bool
	stop    chan struct{}  // closed by close: every waiter stops waiting
	done    sync.WaitGroup // the reader and the writer
}

// subscription is a SUBSCRIBE (or, with off, an UNSUBSCRIBE) to send.
type subscription struct {
	channel string
	off     bool
}

// waitLine is one release channel's waiters, by owner token.
type waitLine struct {
	waiters   map[string]*waiter
	confirmed chan struct{} // closed once Redis confirmed the subscription
	// early are the last grants to owners not listening, the Locker's own
	// among them: an attempt joins once its enqueue is answered, and its
	// grant may come first. An older one is the refresh's to learn.
	early [16]earlyGrant
	next  int // where the next early grant goes
}

// earlyGrant is the key handed to an owner token, with its fence.
type earlyGrant struct {
	owner string
	fence int64
}

// waiter is one queued attempt of a waiting Acquire.
type waiter struct {
	channel, owner string
	grant          chan int64 // the fence granted; buffered, never blocks the reader
	line           *waitLine
}

func newWakeups(client redis.UniversalClient) *wakeups {
	w := &wakeups{lines: map[string]*waitLine{}, stop: make(chan struct{})}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
		w.client = client
	}
	return w
}

// join listens for the grant of owner on channel, subscribing to it if it
// is the channel's first waiter (await waits for the subscription's
// confirmation). It returns nil after close, and when grants are not
// listened for.
func (w *wakeups) join(ctx context.Context, channel, owner string) *waiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.client == nil {
		return nil
	}
	if w.ps == nil {
		w.ps = w.client.Subscribe(context.WithoutCancel(ctx)) // connects with the first subscription
		w.kick = make(chan struct{}, 1)
		w.done.Add(2)
		go w.read(w.ps.ChannelWithSubscriptions())
		go w.write(w.ps)
	}
	line := w.lines[channel]
	if line == nil {
		line = &waitLine{waiters: map[string]*waiter{}, confirmed: make(chan struct{})}
		w.lines[channel] = line
		w.send(subscription{channel: channel})
	}
	wt := &waiter{channel: channel, owner: owner, grant: make(chan int64, 1), line: line}
	line.waiters[owner] = wt
	for i, g := range line.early {
		if g.owner == owner {
			line.early[i] = earlyGrant{}
			select {
			case wt.grant <- g.fence:
			default: // a copy of the message
			}
		}
	}
	return wt
}

// leave stops listening for wt's grant, unsubscribing from its channel
// when it was the last.
func (w *wakeups) leave(wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := w.lines[wt.channel]
	if line == nil || w.closed {
		return
	}
	delete(line.waiters, wt.owner)
	if len(line.waiters) == 0 {
		delete(w.lines, wt.channel)
		w.send(subscription{channel: wt.channel, off: true})
	}
}

// send queues s for the writer; mu is held.
func (w *wakeups) send(s subscription) {
	w.pending = append(w.pending, s)
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// write sends the pending subscriptions in order until close. An error
// leaves the waiters of that channel to their backoff.
func (w *wakeups) write(ps *redis.PubSub) {
	defer w.done.Done()
	ctx := context.Background()
	for range w.kick {
		w.mu.Lock()
		batch, closed := w.pending, w.closed
		w.pending = nil
		w.mu.Unlock()
		if closed {
			return
		}
		for _, s := range batch {
			if s.off {
				_ = ps.Unsubscribe(ctx, s.channel)
			} else {
				_ = ps.Subscribe(ctx, s.channel)
			}
		}
	}
}

// read dispatches the connection's messages until it is closed.
func (w *wakeups) read(msgs <-chan any) {
	defer w.done.Done()
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				w.confirm(m.Channel)
			}
		case *redis.Message:
			w.deliver(m.Channel, m.Payload)
		}
	}
}

func (w *wakeups) confirm(channel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if line := w.lines[channel]; line != nil {
		select {
		case <-line.confirmed: // a resubscription after a reconnect
		default:
			close(line.confirmed)
		}
	}
}

// deliver hands a grant, "<owner> <fence>", to the waiter of that owner,
// if it is this Locker's. Other payloads are not grants.
func (w *wakeups) deliver(channel, payload string) {
	owner, digits, ok := strings.Cut(payload, " ")
	fence, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || fence <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if line := w.lines[channel]; line != nil {
		if wt := line.waiters[owner]; wt != nil {
			select {
			case wt.grant <- fence:
			default: // one grant per owner token: a copy of the message
			}
		} else {
			line.early[line.next] = earlyGrant{owner: owner, fence: fence}
			line.next = (line.next + 1) % len(line.early)
		}
	}
}

// stopWaiters stops every waiter: each finds its Locker closed and leaves
// its key's queue (a script; the subscriptions end with close).
func (w *wakeups) stopWaiters() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
}

// close stops every waiter, ends the connection and waits for the reader
// and the writer. go-redis's Close waits for a subscription being sent,
// including its dial: against an unreachable Redis, up to the client's
// dial timeout.
func (w *wakeups) close() {
	w.stopWaiters()
	w.mu.Lock()
	ps := w.ps
	w.mu.Unlock()
	if ps != nil {
		close(w.kick) // the writer returns after the send in progress
		_ = ps.Close()
		w.done.Wait()
	}
}

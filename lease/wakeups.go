package lease

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// wakeups tells a Locker's waiters (WithWait) that the key they wait for
// was released, so that a waiter tries again at once instead of at the end
// of its backoff: the time from a release to the next holder is one
// notification and one acquire, not a poll.
//
// The release script publishes on the key's release channel
// (leasekeys.Keys) when it deletes a lock someone may wait for (its wait
// mark is set: a release nobody waits for sends nothing, which matters on
// Cluster, where a PUBLISH goes to every node). One Pub/Sub connection per
// Locker (shared with the Lockers derived from it), opened with the first
// wait, subscribes to the channels its waiters wait on, and unsubscribes
// from a channel when its last waiter leaves. Wake-ups need a *redis.Client
// (single node, Sentinel) or *redis.ClusterClient, and, under a Redis ACL
// that restricts channels, the channels of the namespace (&<namespace>:*);
// otherwise waiters poll. Pub/Sub ignores the database number: two
// deployments on one server with the same namespace wake each other's
// waiters, at the cost of an attempt.
//
// Subscribing never holds up a waiter: a goroutine of the connection's
// sends the SUBSCRIBE and UNSUBSCRIBE commands in the order they were
// decided, while the waiter waits on its backoff as before, and tries again
// at once when Redis confirms the subscription (a release in between was
// published to nobody).
//
// A release wakes one waiter of its key in each Locker, the one that has
// waited longest and is not already woken, so a release costs one attempt
// per Locker, not one per waiter (no thundering herd). A waiter whose
// attempt loses to another process waits on, first in line; one that
// leaves with a wake it did not use passes it on. A notification
// can be missed (the connection dropped and resubscribed, a failover, a
// release before the subscription was confirmed): the backoff still bounds
// every wait, as without wake-ups.
type wakeups struct {
	client redis.UniversalClient // nil: wake-ups are off for this client

	mu      sync.Mutex
	ps      *redis.PubSub // nil until the first wait
	lines   map[string]*waitLine
	pending []subscription // for the writer, in the order decided
	kick    chan struct{}  // tells the writer of pending (buffered)
	closed  bool
	done    sync.WaitGroup // the reader and the writer
}

// subscription is a SUBSCRIBE (or, with off, an UNSUBSCRIBE) to send.
type subscription struct {
	channel string
	off     bool
}

// waitLine is one release channel's waiters, in the order they came.
type waitLine struct {
	waiters   []*waiter
	confirmed chan struct{} // closed once Redis confirmed the subscription
}

// waiter is one waiting Acquire.
type waiter struct {
	channel string
	wake    chan struct{} // buffered: a wake is never lost while it waits
	line    *waitLine
}

func newWakeups(client redis.UniversalClient) *wakeups {
	w := &wakeups{lines: map[string]*waitLine{}}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
		w.client = client
	}
	return w
}

// join adds a waiter for channel, subscribing to it if it is the channel's
// first; subscribed tells that Redis had confirmed the subscription
// already. It returns nil after close, and when wake-ups are off.
func (w *wakeups) join(ctx context.Context, channel string) (wt *waiter, subscribed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.client == nil {
		return nil, false
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
		line = &waitLine{confirmed: make(chan struct{})}
		w.lines[channel] = line
		w.send(subscription{channel: channel})
	}
	wt = &waiter{channel: channel, wake: make(chan struct{}, 1), line: line}
	line.waiters = append(line.waiters, wt)
	select {
	case <-line.confirmed:
		subscribed = true
	default:
	}
	return wt, subscribed
}

// leave removes wt, unsubscribing from its channel when it was the last.
func (w *wakeups) leave(wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := w.lines[wt.channel]
	if line == nil || w.closed {
		return
	}
	for i, x := range line.waiters {
		if x == wt {
			line.waiters = append(line.waiters[:i], line.waiters[i+1:]...)
			break
		}
	}
	if len(wt.wake) == 1 {
		wakeFirst(line) // a wake it did not use: the key may be free
	}
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
			w.wakeOne(m.Channel)
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

// wakeOne wakes the longest waiting of channel's waiters that is not woken
// already.
func (w *wakeups) wakeOne(channel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if line := w.lines[channel]; line != nil {
		wakeFirst(line)
	}
}

// wakeFirst wakes the first of line's waiters not woken already; mu is
// held.
func wakeFirst(line *waitLine) {
	for _, wt := range line.waiters {
		select {
		case wt.wake <- struct{}{}:
			return
		default: // woken, its attempt not made yet
		}
	}
}

// close wakes every waiter (each finds its Locker closed at its next
// attempt), ends the connection and waits for the reader and the writer.
// go-redis's Close waits for a subscription being sent, including its
// dial: against an unreachable Redis, up to the client's dial timeout.
func (w *wakeups) close() {
	w.mu.Lock()
	w.closed = true
	for _, line := range w.lines {
		for _, wt := range line.waiters {
			select {
			case wt.wake <- struct{}{}:
			default:
			}
		}
	}
	ps := w.ps
	w.mu.Unlock()
	if ps != nil {
		close(w.kick) // the writer returns after the send in progress
		_ = ps.Close()
		w.done.Wait()
	}
}

package lease

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// wakeups tells a Locker's waiters (Config.Wait) that the key they wait for
// was released, so that a waiter tries again at once instead of at the end
// of its backoff: one notification and one acquire, not a poll.
//
// The release script publishes on the key's release channel
// (leasekeys.Keys) only when the key's wait mark is set, since a PUBLISH
// goes to every node on Cluster. One Pub/Sub connection per Locker (shared
// with the Lockers derived from it), opened with the first wait, subscribes
// to the channels its waiters wait on; a goroutine sends SUBSCRIBE and
// UNSUBSCRIBE in the order decided, so subscribing never holds up a waiter.
// Wake-ups need a *redis.Client or *redis.ClusterClient and, under a
// channel-restricting ACL, &<namespace>:*; otherwise waiters poll. Pub/Sub
// ignores the database number: same-namespace deployments on one server
// wake each other's waiters, at the cost of an attempt.
//
// A release wakes one waiter of its key per Locker, the longest waiting and
// not yet woken (no thundering herd); one that loses waits on, first in
// line, and one that leaves passes an unused wake on. A notification can be
// missed (a reconnect, a failover, a release before the subscription): the
// backoff still bounds every wait.
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

package lease

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
)

// wakeups brings a Locker's queued waiters (Config.Wait) their grants: a
// release, or any script that finds the key free, hands the key to the
// first live entry of its wait queue and publishes "<owner> <fence>" on the
// grant channel the entry names, its waiter's Locker's, and the waiter
// whose attempt has that owner token holds the lease without another round
// trip. No other Locker hears of the grant.
//
// A Locker (with the Lockers derived from it) has one grant channel per
// namespace it waits in (leasekeys.GrantChannel), subscribed on one Pub/Sub
// connection at its first wait there and kept until Close; a goroutine
// sends the SUBSCRIBEs, so subscribing never holds up a waiter. Grants need
// a *redis.Client or *redis.ClusterClient and, under a channel-restricting
// ACL, &<namespace>:{*. A message can be missed (a grant before the
// subscription, or while go-redis reconnects): each confirmation of a
// subscription, the first or one go-redis's resubscribe after a reconnect
// brings, wakes its waiters to refresh their entries (await.go) at once,
// which learns such a grant.
type wakeups struct {
	client redis.UniversalClient // nil: grants are not listened for
	id     string                // the Locker's, in its grant channels

	mu      sync.Mutex
	ps      *redis.PubSub // nil until the first wait
	subs    map[string]*grantSub
	pending []string      // channels for the writer to subscribe to, in order
	kick    chan struct{} // tells the writer of pending (buffered)
	closed  bool
	stop    chan struct{}  // closed by close: every waiter stops waiting
	done    sync.WaitGroup // the reader and the writer
}

// earlyGrants is how many grants a subscription keeps for owners not
// listening: an attempt joins once its enqueue is answered, and its grant
// may come first. Only the Locker's own attempts are granted on its
// channel, so at most one grant per attempt of the Locker waiting at once
// lands there: 256 keeps every one of 256 waiters in one Locker. An older
// one is the refresh's to learn.
const earlyGrants = 256

// grantSub is one grant channel's waiters, by owner token.
type grantSub struct {
	waiters   map[string]*waiter
	confirmed bool                    // Redis confirmed the subscription once
	early     [earlyGrants]earlyGrant // the last grants to owners not listening
	next      int                     // where the next early grant goes
}

// earlyGrant is the key handed to an owner token, with its fence.
type earlyGrant struct {
	owner string
	fence int64
}

// waiter is one queued attempt of a waiting Acquire.
type waiter struct {
	owner string
	grant chan int64    // the fence granted; buffered, never blocks the reader
	wake  chan struct{} // refresh at once: the subscription was confirmed (buffered)
	sub   *grantSub
}

func newWakeups(client redis.UniversalClient) *wakeups {
	w := &wakeups{subs: map[string]*grantSub{}, stop: make(chan struct{})}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
		w.client, w.id = client, rand.Text()
	}
	return w
}

// channel is the Locker's grant channel in namespace, "" when grants are
// not listened for (an entry without a channel gets no message).
func (w *wakeups) channel(namespace string) string {
	if w.client == nil {
		return ""
	}
	return leasekeys.GrantChannel(namespace, w.id)
}

// join listens for the grant of owner on channel, subscribing to it at its
// first waiter. It returns nil after close, and when grants are not
// listened for.
func (w *wakeups) join(ctx context.Context, channel, owner string) *waiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.client == nil || channel == "" {
		return nil
	}
	if w.ps == nil {
		w.ps = w.client.Subscribe(context.WithoutCancel(ctx)) // connects with the first subscription
		w.kick = make(chan struct{}, 1)
		w.done.Add(2)
		go w.read(w.ps.ChannelWithSubscriptions())
		go w.write(w.ps)
	}
	sub := w.subs[channel]
	if sub == nil {
		sub = &grantSub{waiters: map[string]*waiter{}}
		w.subs[channel] = sub
		w.pending = append(w.pending, channel)
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	wt := &waiter{owner: owner, grant: make(chan int64, 1), wake: make(chan struct{}, 1), sub: sub}
	sub.waiters[owner] = wt
	for i, g := range sub.early {
		if g.owner == owner {
			sub.early[i] = earlyGrant{}
			select {
			case wt.grant <- g.fence:
			default: // a copy of the message
			}
		}
	}
	return wt
}

// leave stops listening for wt's grant; the subscription stays.
func (w *wakeups) leave(wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(wt.sub.waiters, wt.owner)
}

// write subscribes to the pending channels in order until close. A
// SUBSCRIBE that fails is sent again by go-redis once it reconnects (the
// channel is among the connection's); meanwhile the waiters refresh.
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
		for _, channel := range batch {
			_ = ps.Subscribe(ctx, channel)
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

// confirm wakes the waiters of channel, whose subscription Redis confirmed:
// a grant published before it (the first, or the resubscribe after a
// reconnect) reached nobody, and their refresh learns it.
func (w *wakeups) confirm(channel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sub := w.subs[channel]; sub != nil {
		sub.confirmed = true
		for _, wt := range sub.waiters {
			select {
			case wt.wake <- struct{}{}:
			default:
			}
		}
	}
}

// deliver hands a grant, "<owner> <fence>", to the waiter of that owner, or
// keeps it for an owner yet to join. Other payloads are not grants.
func (w *wakeups) deliver(channel, payload string) {
	owner, digits, ok := strings.Cut(payload, " ")
	fence, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || fence <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	sub := w.subs[channel]
	if sub == nil {
		return
	}
	if wt := sub.waiters[owner]; wt != nil {
		select {
		case wt.grant <- fence:
		default: // one grant per owner token: a copy of the message
		}
		return
	}
	sub.early[sub.next] = earlyGrant{owner: owner, fence: fence}
	sub.next = (sub.next + 1) % len(sub.early)
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
// including its dial: against an unreachable Redis, up to the client's dial
// timeout.
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

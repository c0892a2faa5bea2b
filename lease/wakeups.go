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
// The release script publishes on the key's release channel (releaseChannel:
// its lock key with the suffix r for l, in the same hash slot) when it
// deletes the lock. One Pub/Sub connection per Locker, opened with the
// first wait, subscribes to the channels its waiters wait on, and
// unsubscribes from a channel when its last waiter leaves.
//
// A release wakes one waiter of its key in this process, the one that has
// waited longest and is not already woken, so a release costs one attempt
// per process, not one per waiter (no thundering herd). A waiter whose
// attempt loses to another process waits on, first in line. A notification
// can be missed (the connection dropped and resubscribed, a failover, a
// release before the subscription was confirmed): the backoff still bounds
// every wait, as without wake-ups.
type wakeups struct {
	client redis.UniversalClient

	mu     sync.Mutex
	ps     *redis.PubSub // nil until the first wait
	lines  map[string]*waitLine
	closed bool
	done   chan struct{} // closed when the reader has returned
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
	return &wakeups{client: client, lines: map[string]*waitLine{}}
}

// releaseChannel is the Pub/Sub channel a lock key's releases are published
// on (scripts/release.lua derives it the same way).
func releaseChannel(lockKey string) string { return lockKey[:len(lockKey)-1] + "r" }

// join adds a waiter for channel, subscribing to it if it is the channel's
// first. It returns nil after close.
func (w *wakeups) join(ctx context.Context, channel string) *waiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	if w.ps == nil {
		w.ps = w.client.Subscribe(context.WithoutCancel(ctx))
		w.done = make(chan struct{})
		go w.read(w.ps.ChannelWithSubscriptions())
	}
	line := w.lines[channel]
	if line == nil {
		line = &waitLine{confirmed: make(chan struct{})}
		w.lines[channel] = line
		// Sent under mu, so that a subscribe and an unsubscribe of one
		// channel reach Redis in the order they were decided. An error
		// leaves the waiter to its backoff.
		_ = w.ps.Subscribe(context.WithoutCancel(ctx), channel)
	}
	wt := &waiter{channel: channel, wake: make(chan struct{}, 1), line: line}
	line.waiters = append(line.waiters, wt)
	return wt
}

// leave removes wt, unsubscribing from its channel when it was the last.
func (w *wakeups) leave(ctx context.Context, wt *waiter) {
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
	if len(line.waiters) == 0 {
		delete(w.lines, wt.channel)
		_ = w.ps.Unsubscribe(context.WithoutCancel(ctx), wt.channel)
	}
}

// read dispatches the connection's messages until it is closed.
func (w *wakeups) read(msgs <-chan any) {
	defer close(w.done)
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
	line := w.lines[channel]
	if line == nil {
		return
	}
	for _, wt := range line.waiters {
		select {
		case wt.wake <- struct{}{}:
			return
		default: // woken, its attempt not made yet
		}
	}
}

// close ends the connection and waits for the reader. Waiters still
// registered fall back to their backoff.
func (w *wakeups) close() {
	w.mu.Lock()
	w.closed = true
	ps, done := w.ps, w.done
	w.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
		<-done
	}
}

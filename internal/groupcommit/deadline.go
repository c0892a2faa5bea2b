package groupcommit

import (
	"context"
	"sync"
	"time"
)

// deadlines bounds the round trips of the group commit without a timer per
// call. go-redis (with ContextTimeoutEnabled) turns a context's Deadline
// into socket deadlines, and waits on its Done only while it waits for a
// connection (a free one, or a new one whose TLS handshake may never end);
// context.WithDeadline would start and stop a timer on every round trip of
// a few tens of microseconds for that. Here calls whose deadlines fall in
// the same millisecond share one Done channel and one timer, closed at the
// end of that millisecond, so under load a timer serves many calls.
type deadlines struct {
	mu    sync.Mutex
	chans map[int64]chan struct{} // by deadline in Unix milliseconds, rounded up
}

// bound sets c to a context with ctx's values, none of its cancellation
// (deadlineCtx answers Deadline, Done and Err itself), and the deadline d.
// c lives in the call it bounds: no allocation of its own.
func (w *deadlines) bound(c *deadlineCtx, ctx context.Context, d time.Time) context.Context {
	*c = deadlineCtx{Context: ctx, deadline: d, done: w.done(d)}
	return c
}

func (w *deadlines) done(d time.Time) chan struct{} {
	ms := (d.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.chans[ms]; ok {
		return ch
	}
	if w.chans == nil {
		w.chans = make(map[int64]chan struct{})
	}
	ch := make(chan struct{})
	w.chans[ms] = ch
	time.AfterFunc(time.Until(time.UnixMilli(ms)), func() {
		w.mu.Lock()
		delete(w.chans, ms)
		w.mu.Unlock()
		close(ch)
	})
	return ch
}

// deadlineCtx is done within a millisecond after its deadline.
type deadlineCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

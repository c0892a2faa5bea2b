package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handover watches a key change hands across a failover: first holds it;
// a second Locker waits for it from the start (waiting again after each
// unknown attempt: no answer while a primary is down, as a client retrying
// would) and must take it only once first has ended, with a larger fence.
type handover struct {
	first    *Lease
	ended    atomic.Int64 // unix nanoseconds: when first's context was cancelled
	unknowns atomic.Int32 // attempts of the second Locker that ended unknown
	second   chan handedOver
}

type handedOver struct {
	l   *Lease
	err error
	at  time.Time
}

// watchHandover starts the second Locker's wait for first's key.
func watchHandover(ctx context.Context, first *Lease, other *Locker) *handover {
	h := &handover{first: first, second: make(chan handedOver, 1)}
	context.AfterFunc(first.Context(), func() { h.ended.Store(time.Now().UnixNano()) })
	waiting, err := other.With(Config{Wait: 30 * time.Second})
	if err != nil {
		h.second <- handedOver{err: err} // check reports it
		return h
	}
	go func() {
		for {
			l, err := waiting.Acquire(ctx, first.Key())
			if errors.Is(err, ErrUnknown) && ctx.Err() == nil {
				h.unknowns.Add(1)
				continue
			}
			h.second <- handedOver{l, err, time.Now()}
			return
		}
	}()
	return h
}

// check ends the first lease, as its work would once the failover is over
// (renewed until now, or lost), and checks the hand-over.
func (h *handover) check(ctx context.Context, t *testing.T) {
	t.Helper()
	lossErr := h.first.Err()
	_ = h.first.Release(ctx)
	if lossErr != nil {
		var lost *LostError
		require.ErrorAs(t, lossErr, &lost, "a lease ends lost or released: %v", lossErr)
		t.Logf("the first lease was lost: %v", lossErr)
	} else {
		t.Log("the first lease was renewed on the new primary until its release")
	}
	r := <-h.second
	require.NoError(t, r.err)
	t.Cleanup(func() { _ = r.l.Release(context.Background()) })
	t.Logf("the waiting Acquire ended unknown %d times before it took the key", h.unknowns.Load())
	require.NotZero(t, h.ended.Load(), "the first lease's context was never cancelled")
	ended := time.Unix(0, h.ended.Load())
	assert.False(t, r.at.Before(ended), "the key was taken at %v while the first lease held it until %v", r.at, ended)
	assert.Greater(t, r.l.Fence(), h.first.Fence(), "the fence after the failover is larger")
}

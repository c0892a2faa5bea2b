package groupcommit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

func TestDeadlinesShareATimerPerMillisecond(t *testing.T) {
	var w deadlines
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	d := time.Now().Add(50 * time.Millisecond)
	var ac, bc deadlineCtx
	a := w.bound(&ac, parent, d)
	b := w.bound(&bc, context.Background(), d.Add(time.Microsecond))
	cancel() // the caller's cancellation does not reach the round trip

	assert.Equal(t, "v", a.Value(ctxKey{}), "values pass through")
	at, ok := a.Deadline()
	assert.True(t, ok)
	assert.Equal(t, d, at, "the socket deadline is exact")
	assert.Equal(t, a.Done(), b.Done(), "one channel for deadlines in one millisecond")
	require.NoError(t, a.Err())

	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not done after its deadline")
	}
	assert.False(t, time.Now().Before(d), "never done before the deadline")
	require.ErrorIs(t, a.Err(), context.DeadlineExceeded)
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.chans) == 0
	}, time.Second, time.Millisecond, "fired channels are forgotten")
}

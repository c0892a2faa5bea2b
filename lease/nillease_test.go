package lease_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// TestNilLease: the nil Lease FromContext returns outside the middleware
// refuses Commit and Release with an error naming the mistake, never
// runs fn, and answers its other methods with zero values, a cancelled
// context among them: a handler mounted without the middleware fails its
// request, not the process.
func TestNilLease(t *testing.T) {
	l := lease.FromContext(context.Background())
	require.Nil(t, l)
	ran := false
	err := l.Commit(context.Background(), func(context.Context, fence.Token) error { ran = true; return nil })
	require.Error(t, err)
	assert.False(t, ran, "fn runs only under a lease")
	assert.Contains(t, err.Error(), "behind the middleware")
	assert.Equal(t, err, l.Err())
	assert.Equal(t, err, l.Release(context.Background()))
	l.ReleaseAsync(context.Background())
	require.ErrorIs(t, context.Cause(l.Context()), err)
	require.Error(t, l.Context().Err())
	assert.Zero(t, l.Remaining())
	assert.Zero(t, l.Fence())
	assert.Equal(t, fence.Token{}, l.Token())
	assert.Empty(t, l.Key())
}

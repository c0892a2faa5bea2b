package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
)

// TestHandlerRefusals: the errors a holder's handler gets from Commit and
// its write have the table's rows; a token refusal of the holder's own
// token, or any other error, has none; a gRPC status of the handler's own
// is kept.
func TestHandlerRefusals(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string // "": no row
		status int
		code   codes.Code
		retry  time.Duration
	}{
		{fmt.Errorf("ship: %w", &fence.StaleError{Token: mint("k", 41), HighWater: 42}), reasonFenceStale, http.StatusConflict, codes.Aborted, 0},
		{fmt.Errorf("%w: 10ms left, hard margin 50ms", lease.ErrExpiring), reasonExpiring, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{&lease.LostError{Reason: lease.LossDeadline}, reasonLost, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{fmt.Errorf("%w (orders)", fence.ErrForeign), "", 0, 0, 0},
		{errors.New("connection refused"), "", 0, 0, 0},
	} {
		r, ok := handlerRefusal(tc.err)
		require.Equal(t, tc.reason != "", ok, "%v", tc.err)
		st := status.Convert(handlerStatus("lock", tc.err))
		if !ok {
			assert.Equal(t, codes.Unknown, st.Code(), "%v: as it is", tc.err)
			continue
		}
		assert.Equal(t, tc.reason, r.reason)
		assert.Equal(t, tc.status, r.status)
		assert.Equal(t, tc.retry, r.retry)
		assert.Equal(t, tc.code, st.Code())
	}
	own := status.Error(codes.NotFound, "no such order")
	assert.Equal(t, own, handlerStatus("lock", own))
	_, ok := handlerRefusal(nil)
	assert.False(t, ok)
	assert.NoError(t, handlerStatus("lock", nil))
}

// TestGRPCHandlerCommitErrors: a gRPC handler that returns Commit's error,
// or its write's stale rejection, as it is gets the table's status, with
// its ErrorInfo and RetryInfo.
func TestGRPCHandlerCommitErrors(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	// Commit's hard margin is the whole TTL: every Commit is refused.
	expiring := newLocker(t, srv.Client(t), nil, lease.Config{TTL: 2 * time.Second, CommitHard: 2 * time.Second, CommitWarn: 2 * time.Second})
	client := lockedServer(t, expiring, &health{check: func(ctx context.Context) error {
		return lease.FromContext(ctx).Commit(ctx, func(context.Context, fence.Token) error { return nil })
	}}, Config{})
	_, err := client.Check(withLockKey(ctx, "a"), &grpc_health_v1.HealthCheckRequest{})
	code, info, retry := details(t, err)
	assert.Equal(t, codes.Unavailable, code)
	assert.Equal(t, reasonExpiring, info.GetReason())
	require.NotNil(t, retry)
	assert.Equal(t, time.Second, retry.GetRetryDelay().AsDuration())

	lk := newLocker(t, srv.Client(t), nil, lease.Config{})
	client = lockedServer(t, lk, &health{check: func(ctx context.Context) error {
		return lease.FromContext(ctx).Commit(ctx, func(_ context.Context, token fence.Token) error {
			return &fence.StaleError{Token: token, HighWater: token.Fence + 1} // a newer holder wrote first
		})
	}}, Config{})
	_, err = client.Check(withLockKey(ctx, "b"), &grpc_health_v1.HealthCheckRequest{})
	code, info, retry = details(t, err)
	assert.Equal(t, codes.Aborted, code)
	assert.Equal(t, reasonFenceStale, info.GetReason())
	assert.Equal(t, checkMethod, info.GetMetadata()["lock_name"])
	assert.Nil(t, retry)
}

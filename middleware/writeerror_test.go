package middleware

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
)

// TestWriteErrorOnARoute: on a route of HTTP, WriteError answers Commit's
// refusal with the table's problem, the route's lock name and Retry-After,
// through the route's error writer when it has one.
func TestWriteErrorOnARoute(t *testing.T) {
	srv := redistest.Start(t)
	// Commit's hard margin is the whole TTL: every Commit is refused.
	lk := newLocker(t, srv.Client(t), nil, lease.Config{TTL: 2 * time.Second, CommitHard: 2 * time.Second, CommitWarn: 2 * time.Second})
	write := func(w http.ResponseWriter, r *http.Request) {
		err := lease.FromContext(r.Context()).Commit(r.Context(), func(context.Context, fence.Token) error { return nil })
		WriteError(w, r, err)
	}
	url, c := routeServer(t, lk, write, Config{})
	resp := post(t, c, url+"/reports/1")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	p := decodeProblem(t, resp)
	assert.Equal(t, reasonExpiring, p.Reason)
	assert.Equal(t, "urn:lockwatch:problem:"+reasonExpiring, p.Type)
	assert.Equal(t, "POST /reports/{id}", p.LockName)

	var got *Problem
	custom := Config{ErrorWriter: func(w http.ResponseWriter, _ *http.Request, p *Problem) { got = p; w.WriteHeader(p.Status) }}
	url, c = routeServer(t, lk, write, custom)
	assert.Equal(t, http.StatusServiceUnavailable, post(t, c, url+"/reports/2").StatusCode)
	require.NotNil(t, got, "the route's error writer")
	assert.Equal(t, reasonExpiring, got.Reason)
	require.ErrorIs(t, got.Err, lease.ErrExpiring)
}

// TestWriteErrorOffRoute: outside the middleware WriteError answers with
// the default writer; an error the table has no reason for is a 500 that
// shows nothing of the error, also the nil Lease's refusal.
func TestWriteErrorOffRoute(t *testing.T) {
	answer := func(err error) *http.Response {
		w := httptest.NewRecorder()
		WriteError(w, httptest.NewRequest(http.MethodPost, "/orders/7", nil), err)
		return w.Result()
	}
	stale := answer(&fence.StaleError{Token: mint("order:7", 41), HighWater: 42})
	assert.Equal(t, http.StatusConflict, stale.StatusCode)
	assert.Empty(t, stale.Header.Get("Retry-After"))
	p := decodeProblem(t, stale)
	assert.Equal(t, reasonFenceStale, p.Reason)
	assert.Empty(t, p.LockName)

	lost := answer(&lease.LostError{Reason: lease.LossRenewalRejected})
	assert.Equal(t, http.StatusServiceUnavailable, lost.StatusCode)
	assert.Equal(t, reasonLost, decodeProblem(t, lost).Reason)

	noLease := lease.FromContext(context.Background()).Commit(context.Background(), func(context.Context, fence.Token) error { return nil })
	for _, err := range []error{errors.New("dial tcp 10.0.0.7:5432: connection refused"), noLease} {
		resp := answer(err)
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		body, rerr := io.ReadAll(resp.Body)
		require.NoError(t, rerr)
		assert.JSONEq(t, `{"type":"about:blank","title":"Internal Server Error","status":500}`, string(body))
	}
}

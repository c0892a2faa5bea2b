package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/lockwatchtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPayMeetsEveryFault serves pay behind its middleware on the test
// kit's embedded Redis and meets it with each fault: a contended invoice
// is refused 409 with Retry-After, an acquire whose reply is lost 503
// LEASE_UNKNOWN without paying, a payment whose lease is lost 503
// LEASE_LOST without paying, and a payment a newer one overtook 409
// without overwriting it.
func TestPayMeetsEveryFault(t *testing.T) {
	srv := lockwatchtest.New(t, lease.Config{TTL: time.Second})
	ctx := context.Background()
	payments := fence.NewRedisStore(srv.Client(), "payments", fence.RedisConfig{})
	mux := http.NewServeMux()
	mux.Handle("POST /invoices/{id}/pay", lockInvoice(srv.Locker())(pay(payments, time.Second)))
	paid := func(id string) string {
		v, _, err := payments.Read(ctx, "invoice:"+id)
		require.NoError(t, err)
		return string(v)
	}

	srv.Contend("invoice:1")
	rec := serve(mux, "1")
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	assert.Contains(t, rec.Body.String(), "LEASE_CONTENDED")

	srv.DropNextReply("invoice:2")
	rec = serve(mux, "2")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "LEASE_UNKNOWN")
	assert.Empty(t, paid("2"))

	answer := serveWhileHeld(t, srv, mux, "3")
	srv.Lose("invoice:3")
	rec = <-answer
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "LEASE_LOST")
	assert.Empty(t, paid("3"))

	answer = serveWhileHeld(t, srv, mux, "4")
	require.NoError(t, payments.Write(ctx, "invoice:4", srv.NewerToken("invoice:4"), []byte("paid by the next holder")))
	rec = <-answer
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.Contains(t, rec.Body.String(), "a newer payment")
	assert.Equal(t, "paid by the next holder", paid("4"))
}

// serve pays invoice id.
func serve(h http.Handler, id string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/invoices/"+id+"/pay", nil))
	return rec
}

// serveWhileHeld starts paying invoice id and returns once its lease is
// held, the payment's work under way.
func serveWhileHeld(t *testing.T, srv *lockwatchtest.Server, h http.Handler, id string) <-chan *httptest.ResponseRecorder {
	answer := make(chan *httptest.ResponseRecorder, 1)
	go func() { answer <- serve(h, id) }()
	require.Eventually(t, func() bool {
		info, err := srv.Locker().Inspect(context.Background(), "invoice:"+id)
		return err == nil && info.Held
	}, 5*time.Second, 5*time.Millisecond)
	return answer
}

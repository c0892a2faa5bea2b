package lockwatchtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/lockwatchtest"
)

// pay is the code under test: a service's handler that pays an invoice
// under the invoice's lease (taken by the middleware) and records the
// payment in a fenced store. started, if not nil, hears when the work
// begins; the work lasts until ctx ends or finish is closed.
func pay(store *fence.RedisStore, started chan<- struct{}, finish <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		l := lease.FromContext(ctx)
		if started != nil {
			started <- struct{}{}
		}
		select {
		case <-finish: // charge the card, ...
		case <-ctx.Done():
			return // lease lost: the middleware answers 503 LEASE_LOST
		}
		err := l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
			return store.Write(ctx, "invoice:"+r.PathValue("id"), token, []byte("paid"))
		})
		switch {
		case errors.Is(err, fence.ErrStale):
			http.Error(w, "a newer payment of this invoice was recorded", http.StatusConflict)
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			_, _ = fmt.Fprintln(w, "paid")
		}
	})
}

// service serves pay behind the middleware on srv's Locker.
func service(srv *lockwatchtest.Server, started chan<- struct{}, finish <-chan struct{}) http.Handler {
	store := fence.NewRedisStore(srv.Client(), "payments", fence.RedisConfig{})
	lock := middleware.HTTP(srv.Locker(), func(r *http.Request) string { return "invoice:" + r.PathValue("id") }, middleware.Config{})
	mux := http.NewServeMux()
	mux.Handle("POST /invoices/{id}/pay", lock(pay(store, started, finish)))
	return mux
}

// post serves one payment of invoice 42 and returns the recorder.
func post(h http.Handler) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/invoices/42/pay", nil))
	return rec
}

// TestPayHandlesEveryFault shows pay meeting each fault: a contended
// invoice is refused with 409 and Retry-After, an unknown acquire runs no
// work, a lost lease stops the work, and a stale write is refused.
func TestPayHandlesEveryFault(t *testing.T) {
	t.Parallel()
	srv := lockwatchtest.New(t, lease.Config{TTL: time.Second})
	done := make(chan struct{})
	close(done) // the work finishes at once, unless a test holds it
	h := service(srv, nil, done)
	require.Equal(t, http.StatusOK, post(h).Code)

	release := srv.Contend("invoice:42")
	rec := post(h)
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	assert.Contains(t, rec.Body.String(), "LEASE_CONTENDED")
	release()

	ran := make(chan struct{}, 1)
	srv.DropNextReply("invoice:42")
	rec = post(service(srv, ran, done))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "LEASE_UNKNOWN")
	assert.Empty(t, ran, "the work did not run")

	started, finish := make(chan struct{}), make(chan struct{})
	h = service(srv, started, finish)
	answer := make(chan *httptest.ResponseRecorder)
	go func() { answer <- post(h) }()
	<-started
	srv.Lose("invoice:42")
	rec = <-answer
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "LEASE_LOST")

	go func() { answer <- post(h) }()
	<-started
	store := fence.NewRedisStore(srv.Client(), "payments", fence.RedisConfig{})
	require.NoError(t, store.Write(context.Background(), "invoice:42", srv.NewerToken("invoice:42"), []byte("paid by the next holder")))
	close(finish)
	rec = <-answer
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.Contains(t, rec.Body.String(), "a newer payment")
}

// inTest runs fn as a test would, for the examples: Fatalf panics, and
// the cleanups run when fn returns.
func inTest(fn func(t testing.TB)) {
	t := &exampleTB{}
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
	}()
	fn(t)
}

type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (t *exampleTB) Helper()                      {}
func (t *exampleTB) Cleanup(f func())             { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

// Another owner holds the key: Acquire is refused.
func ExampleServer_Contend() {
	inTest(func(t testing.TB) {
		srv := lockwatchtest.New(t, lease.Config{})
		srv.Contend("invoice:42")
		_, err := srv.Locker().Acquire(context.Background(), "invoice:42")
		var refused *lease.NotAcquiredError
		fmt.Println(errors.Is(err, lease.ErrNotAcquired), errors.As(err, &refused))
	})
	// Output: true true
}

// The acquire's reply is lost: its outcome is unknown, and the work must
// not run.
func ExampleServer_DropNextReply() {
	inTest(func(t testing.TB) {
		srv := lockwatchtest.New(t, lease.Config{AcquireTimeout: 100 * time.Millisecond})
		srv.DropNextReply("invoice:42")
		_, err := srv.Locker().Acquire(context.Background(), "invoice:42")
		fmt.Println(errors.Is(err, lease.ErrUnknown))
	})
	// Output: true
}

// The key is gone from Redis: the holder's lease is lost at its next
// renewal, and its context is cancelled with the reason.
func ExampleServer_Lose() {
	inTest(func(t testing.TB) {
		srv := lockwatchtest.New(t, lease.Config{TTL: time.Second})
		l, _ := srv.Locker().Acquire(context.Background(), "invoice:42")
		srv.Lose("invoice:42")
		<-l.Context().Done()
		var lost *lease.LostError
		if errors.As(context.Cause(l.Context()), &lost) {
			fmt.Println(lost.Reason)
		}
	})
	// Output: renewal_rejected
}

// A next holder wrote first: the holder's write is stale.
func ExampleServer_NewerToken() {
	inTest(func(t testing.TB) {
		srv := lockwatchtest.New(t, lease.Config{})
		ctx := context.Background()
		store := fence.NewRedisStore(srv.Client(), "payments", fence.RedisConfig{})
		l, _ := srv.Locker().Acquire(ctx, "invoice:42")
		_ = store.Write(ctx, "invoice:42", srv.NewerToken("invoice:42"), []byte("next"))
		err := store.Write(ctx, "invoice:42", l.Token(), []byte("late"))
		var stale *fence.StaleError
		fmt.Println(errors.Is(err, fence.ErrStale), errors.As(err, &stale))
	})
	// Output: true true
}

// Two next holders wrote, one after the other: each token is newer than
// the one before, and the holder's write after them is stale; a lease
// taken next writes again.
func ExampleServer_NewerToken_twice() {
	inTest(func(t testing.TB) {
		srv := lockwatchtest.New(t, lease.Config{})
		ctx := context.Background()
		store := fence.NewRedisStore(srv.Client(), "payments", fence.RedisConfig{})
		l, _ := srv.Locker().Acquire(ctx, "invoice:42")
		first, second := srv.NewerToken("invoice:42"), srv.NewerToken("invoice:42")
		fmt.Println(store.Write(ctx, "invoice:42", first, []byte("next")))
		fmt.Println(store.Write(ctx, "invoice:42", second, []byte("the one after")))
		fmt.Println(errors.Is(store.Write(ctx, "invoice:42", l.Token(), []byte("late")), fence.ErrStale))
		_ = l.Release(ctx)
		next, _ := srv.Locker().Acquire(ctx, "invoice:42")
		fmt.Println(store.Write(ctx, "invoice:42", next.Token(), []byte("retried")))
	})
	// Output:
	// <nil>
	// <nil>
	// true
	// <nil>
}

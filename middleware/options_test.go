package middleware

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// TestErrorWriterServesHolderAndGuard: one function, set as Config's and
// GuardConfig's ErrorWriter, writes both roles' HTTP refusals: a closed Locker's LEASE_UNAVAILABLE, a missing
// token's FENCE_MISSING (neither reaches Redis).
func TestErrorWriterServesHolderAndGuard(t *testing.T) {
	var got []string
	ew := func(w http.ResponseWriter, _ *http.Request, p *Problem) {
		got = append(got, p.Reason)
		w.WriteHeader(http.StatusTeapot)
	}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	locker := lease.NewLocker(client, lease.Config{Telemetry: telemetrytest.New(t).Tel})
	require.NoError(t, locker.Close())
	key := func(*http.Request) string { return "k" }
	ran := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") })

	for _, h := range []http.Handler{
		HTTP(locker, key, Config{ErrorWriter: ew})(ran),
		NewGuard(fence.NewRedisStore(client, "ledger", fence.RedisConfig{}), GuardConfig{ErrorWriter: ew}).HTTP(key)(ran),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/ledger/k", nil))
		assert.Equal(t, http.StatusTeapot, rec.Code)
	}
	assert.Equal(t, []string{reasonUnavailable, reasonFenceMissing}, got)

	// Nil is the default: the default writer answers.
	rec := httptest.NewRecorder()
	NewGuard(fence.NewRedisStore(client, "ledger", fence.RedisConfig{}), GuardConfig{ErrorWriter: nil}).HTTP(key)(ran).
		ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/ledger/k", nil))
	assert.Equal(t, http.StatusPreconditionRequired, rec.Code)
	assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
}

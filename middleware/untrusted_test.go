package middleware

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// Tokens a guard cannot trust: minted for another key (FENCE_FOREIGN), not
// signed by a Locker (FENCE_FORGED), further ahead than any Locker mints
// (FENCE_AHEAD), a plain number (FENCE_UNSCOPED), or not in the wire form
// at all (FENCE_MALFORMED). Each is refused on HTTP and gRPC before any
// comparison with the mark: the mark does not move, the handler does not
// run, and the refusal is counted under its own result of
// lockwatch_fence_checks_total, never as a stale write.

// guardedLedger is a resource "ledger" behind one Guard over a real Redis:
// PUT /ledger/{id} on HTTP (the key is id), and the health service on gRPC
// (unary Check and stream Watch, the key is the lock-key metadata). The
// store and the guard record to h. A handler that runs sends its token to
// ran.
type guardedLedger struct {
	h     *telemetrytest.Harness
	store *fence.RedisStore
	url   string
	http  *http.Client                // sends the headers it is given
	prop  *http.Client                // RoundTripper: sends the context's token
	rpc   grpc_health_v1.HealthClient // with the client interceptors
	ran   chan fence.Token
}

func newGuardedLedger(t *testing.T, cfg fence.RedisConfig) *guardedLedger {
	srv := redistest.Start(t)
	h := telemetrytest.New(t)
	cfg.Namespace, cfg.Telemetry = "untrusted", h.Tel
	g := &guardedLedger{h: h, store: fence.NewRedisStore(srv.Client(t), "ledger", cfg), ran: make(chan fence.Token, 100)}
	guard := NewGuard(g.store, GuardConfig{Telemetry: h.Tel, Resource: "ledger"})
	record := func(ctx context.Context) {
		tok, _ := fence.FromContext(ctx)
		g.ran <- tok
	}
	mux := http.NewServeMux()
	mux.Handle("PUT /ledger/{id}", guard.HTTP(pathKey)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r.Context())
		w.WriteHeader(http.StatusNoContent)
	})))
	g.url, g.http = serveHTTP(t, mux)
	g.prop = &http.Client{Transport: RoundTripper(&http.Transport{})}
	t.Cleanup(g.prop.CloseIdleConnections)
	g.rpc = serveGRPC(t, &health{
		check: func(ctx context.Context) error { record(ctx); return nil },
		watch: func(stream grpc_health_v1.Health_WatchServer) error {
			record(stream.Context())
			return stream.Send(&grpc_health_v1.HealthCheckResponse{})
		},
	}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(guard.UnaryServerInterceptor(unaryKey)),
		grpc.ChainStreamInterceptor(guard.StreamServerInterceptor(streamKey)),
	}, grpc.WithChainUnaryInterceptor(UnaryClientInterceptor()), grpc.WithChainStreamInterceptor(StreamClientInterceptor()))
	return g
}

// put sends PUT /ledger/key with the given Fencing-Token values, and
// returns the status and, for a refusal, its reason.
func (g *guardedLedger) put(t *testing.T, key string, values ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, g.url+"/ledger/"+key, nil)
	require.NoError(t, err)
	for _, v := range values {
		req.Header.Add(tokenHeader, v)
	}
	return g.do(t, g.http, req)
}

// putOn sends PUT /ledger/key on ctx through RoundTripper, which sets the
// header from ctx's token.
func (g *guardedLedger) putOn(t *testing.T, ctx context.Context, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, g.url+"/ledger/"+key, nil)
	require.NoError(t, err)
	return g.do(t, g.prop, req)
}

func (g *guardedLedger) do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, ""
	}
	p := decodeProblem(t, resp)
	assert.Equal(t, resp.StatusCode, p.Status)
	assert.NotEmpty(t, p.Detail)
	return resp.StatusCode, p.Reason
}

// check calls Check for key with the given fencing-token values.
func (g *guardedLedger) check(t *testing.T, key string, values ...string) (codes.Code, string) {
	t.Helper()
	ctx := testCtx(t) // checkOn adds the key
	for _, v := range values {
		ctx = metadata.AppendToOutgoingContext(ctx, tokenMetadata, v)
	}
	return g.checkOn(t, ctx, key)
}

// checkOn calls Check for key on ctx, whose token (if any) the client
// interceptor sends.
func (g *guardedLedger) checkOn(t *testing.T, ctx context.Context, key string) (codes.Code, string) {
	t.Helper()
	_, err := g.rpc.Check(withLockKey(ctx, key), &grpc_health_v1.HealthCheckRequest{})
	return grpcAnswer(t, err)
}

// watchOn opens Watch for key on ctx and reads its first answer.
func (g *guardedLedger) watchOn(t *testing.T, ctx context.Context, key string) (codes.Code, string) {
	t.Helper()
	stream, err := g.rpc.Watch(withLockKey(ctx, key), &grpc_health_v1.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	return grpcAnswer(t, err)
}

// grpcAnswer is a call's code and, for a refusal, its reason.
func grpcAnswer(t *testing.T, err error) (codes.Code, string) {
	t.Helper()
	if err == nil {
		return codes.OK, ""
	}
	code, info, retry := details(t, err)
	assert.Nil(t, retry, "a token refusal is not retried")
	return code, info.GetReason()
}

func (g *guardedLedger) mark(t *testing.T, key string) int64 {
	t.Helper()
	_, mark, err := g.store.Read(context.Background(), key)
	require.NoError(t, err)
	return mark
}

// checks is lockwatch_fence_checks_total{resource="ledger",result}.
func (g *guardedLedger) checks(t *testing.T, result obs.FenceResult) int64 {
	return g.h.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, "ledger", obs.AttrResult, string(result)))
}

// rejections is lockwatch_fence_rejections_total{resource="ledger"}.
func (g *guardedLedger) rejections(t *testing.T) int64 {
	return g.h.Sum(t, obs.FenceRejections, telemetrytest.Attrs(obs.AttrResource, "ledger"))
}

// took returns the token of the handler that ran for the last admitted
// request (it has run by the time the answer is back).
func (g *guardedLedger) took(t *testing.T) fence.Token {
	t.Helper()
	select {
	case tok := <-g.ran:
		return tok
	case <-time.After(5 * time.Second):
		require.FailNow(t, "no handler ran")
		return fence.Token{}
	}
}

// ranNone asserts that no handler ran since the last drain.
func (g *guardedLedger) ranNone(t *testing.T) {
	t.Helper()
	select {
	case tok := <-g.ran:
		assert.Fail(t, "a handler ran", "with token %v", tok)
	default:
	}
}

// TestGuardRefusesAnotherKeysToken: the propagators send a lease's token
// on every call, whatever it is for. A lease on key A that calls the
// ledger's key B (RoundTripper, the unary and the stream client
// interceptors) is refused FENCE_FOREIGN (403, PERMISSION_DENIED), though
// its fence is above B's mark: admitted, it would have moved B's mark past
// every fence B's leases have minted, and B's holder would be refused as
// stale. B's mark stays, B's holder is still admitted, and the refusals are
// counted foreign, not as stale writes. A token of key B minted in another
// lease namespace is foreign too.
func TestGuardRefusesAnotherKeysToken(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Client(t), telemetrytest.New(t).Tel, lease.Config{})
	g := newGuardedLedger(t, fence.RedisConfig{LockNamespace: leaseNamespace(t)})

	lB, err := lk.Acquire(ctx, "B")
	require.NoError(t, err)
	defer lB.Release(ctx)
	status, reason := g.putOn(t, lB.Context(), "B")
	require.Equal(t, http.StatusNoContent, status, reason)
	assert.Equal(t, lB.Token(), g.took(t))
	require.Equal(t, lB.Fence(), g.mark(t, "B"))

	lA, err := lk.Acquire(ctx, "A")
	require.NoError(t, err)
	defer lA.Release(ctx)
	require.Greater(t, lA.Fence(), lB.Fence(), "A's fence must be above B's mark, or admitting it could not move the mark")

	status, reason = g.putOn(t, lA.Context(), "B")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, reasonFenceForeign, reason)
	code, reason := g.checkOn(t, lA.Context(), "B")
	assert.Equal(t, codes.PermissionDenied, code)
	assert.Equal(t, reasonFenceForeign, reason)
	code, reason = g.watchOn(t, lA.Context(), "B")
	assert.Equal(t, codes.PermissionDenied, code)
	assert.Equal(t, reasonFenceForeign, reason)
	// Key B in another lease namespace: another lock, though its key is B.
	otherNS := fence.NewContext(ctx, fence.Mint(leaseNamespace(t)+"-other", "B", lB.Fence()+1, nil))
	status, reason = g.putOn(t, otherNS, "B")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, reasonFenceForeign, reason)
	g.ranNone(t)

	assert.Equal(t, lB.Fence(), g.mark(t, "B"), "a foreign token moved B's mark")
	assert.Zero(t, g.mark(t, "A"), "a refused token was admitted under its own key")
	assert.EqualValues(t, 4, g.checks(t, obs.FenceForeign))
	assert.EqualValues(t, 0, g.checks(t, obs.FenceRejected))
	assert.EqualValues(t, 0, g.rejections(t), "a foreign token is not a stale write")

	// B's holder is not locked out; A's token is good where it belongs.
	status, _ = g.putOn(t, lB.Context(), "B")
	assert.Equal(t, http.StatusNoContent, status)
	assert.Equal(t, lB.Token(), g.took(t))
	code, _ = g.checkOn(t, lA.Context(), "A")
	assert.Equal(t, codes.OK, code)
	assert.Equal(t, lA.Token(), g.took(t))
	assert.EqualValues(t, 3, g.checks(t, obs.FenceAccepted))
	assert.EqualValues(t, 4, g.checks(t, obs.FenceForeign))
}

// testSecrets returns secrets whose active id is id, with a secret of
// 32 bytes of fill.
func testSecrets(t *testing.T, id string, fill byte) *fence.Secrets {
	s, err := fence.NewSecrets(id, map[string][]byte{id: bytes.Repeat([]byte{fill}, 32)})
	require.NoError(t, err)
	return s
}

// TestGuardRefusesForgedTokens: behind a store with secrets, only tokens
// signed with one of them are admitted. An unsigned token of the right key,
// one signed with another secret under the same or an unknown key id, and
// a signed token whose fence was raised after signing are refused
// FENCE_FORGED (403, PERMISSION_DENIED), before the scope is looked at (an
// unsigned token of another key is forged, not foreign); a genuine
// signature does not make another key's token admissible (FENCE_FOREIGN).
// The mark stays the signed lease's, and nothing counts as stale.
func TestGuardRefusesForgedTokens(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	secrets := testSecrets(t, "k1", 0x11)
	lk := newLocker(t, srv.Client(t), telemetrytest.New(t).Tel, lease.Config{Secrets: secrets})
	ns := leaseNamespace(t)
	g := newGuardedLedger(t, fence.RedisConfig{LockNamespace: ns, Secrets: secrets})

	l, err := lk.Acquire(ctx, "B")
	require.NoError(t, err)
	defer l.Release(ctx)
	require.Equal(t, "k1", l.Token().KeyID, "the Locker signs")
	status, reason := g.putOn(t, l.Context(), "B")
	require.Equal(t, http.StatusNoContent, status, reason)
	assert.Equal(t, l.Token(), g.took(t))

	next := l.Fence() + 1000 // admitted, any of these would move the mark
	raised := l.Token()
	raised.Fence = next
	for _, tc := range []struct {
		name   string
		token  fence.Token
		reason string
	}{
		{"unsigned", fence.Mint(ns, "B", next, nil), reasonFenceForged},
		{"another secret, same key id", fence.Mint(ns, "B", next, testSecrets(t, "k1", 0x22)), reasonFenceForged},
		{"unknown key id", fence.Mint(ns, "B", next, testSecrets(t, "k9", 0x11)), reasonFenceForged},
		{"fence raised after signing", raised, reasonFenceForged},
		{"unsigned, another key", fence.Mint(ns, "A", next, nil), reasonFenceForged},
		{"signed, another key", fence.Mint(ns, "A", next, secrets), reasonFenceForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, reason := g.put(t, "B", tc.token.String())
			assert.Equal(t, http.StatusForbidden, status)
			assert.Equal(t, tc.reason, reason)
			code, reason := g.check(t, "B", tc.token.String())
			assert.Equal(t, codes.PermissionDenied, code)
			assert.Equal(t, tc.reason, reason)
			g.ranNone(t)
			assert.Equal(t, l.Fence(), g.mark(t, "B"), "a refused token moved the mark")
		})
	}
	assert.EqualValues(t, 10, g.checks(t, obs.FenceForged))
	assert.EqualValues(t, 2, g.checks(t, obs.FenceForeign))
	assert.EqualValues(t, 1, g.checks(t, obs.FenceAccepted))
	assert.EqualValues(t, 0, g.rejections(t), "a forged token is not a stale write")

	// The genuine signature of the same fence is still admitted.
	code, _ := g.checkOn(t, l.Context(), "B")
	assert.Equal(t, codes.OK, code)
	assert.Equal(t, l.Token(), g.took(t))
}

// TestGuardRefusesTokensAhead: without secrets, an unsigned token's fence
// may be at most the store's clock (its Redis's TIME) plus the skew (10 s
// by default): fences are minted from Redis TIME, so one further ahead was
// not minted by a Locker. 2^53-1 and 2^63-1, the largest fences a JSON
// number and an int64 hold, are refused FENCE_AHEAD (403,
// PERMISSION_DENIED) on HTTP and gRPC, a minute ahead too; the mark stays
// where the holder left it and the holder is still admitted. Admitted,
// 2^63-1 would have stopped every later token of the key for good.
func TestGuardRefusesTokensAhead(t *testing.T) {
	g := newGuardedLedger(t, fence.RedisConfig{})
	now := time.Now().UnixMicro() // the private redis-server runs on this clock
	status, reason := g.put(t, "7", wire("7", now))
	require.Equal(t, http.StatusNoContent, status, reason)
	g.took(t)

	for _, n := range []int64{1<<53 - 1, 1<<63 - 1, now + time.Minute.Microseconds()} {
		t.Run(strconv.FormatInt(n, 10), func(t *testing.T) {
			tok := wire("7", n)
			require.Contains(t, tok, `"`+strconv.FormatInt(n, 10)+`";s=:`, "the wire form")
			status, reason := g.put(t, "7", tok)
			assert.Equal(t, http.StatusForbidden, status)
			assert.Equal(t, reasonFenceAhead, reason)
			code, reason := g.check(t, "7", tok)
			assert.Equal(t, codes.PermissionDenied, code)
			assert.Equal(t, reasonFenceAhead, reason)
			g.ranNone(t)
			assert.Equal(t, now, g.mark(t, "7"), "a token ahead moved the mark")
		})
	}
	assert.EqualValues(t, 6, g.checks(t, obs.FenceAhead))
	assert.EqualValues(t, 0, g.rejections(t), "a token ahead is not a stale write")

	// Within the skew is admitted (a Locker whose Redis runs a little
	// ahead); so is the holder after it.
	status, reason = g.put(t, "7", wire("7", now+time.Second.Microseconds()))
	assert.Equal(t, http.StatusNoContent, status, reason)
	assert.Equal(t, mint("7", now+time.Second.Microseconds()), g.took(t))
	code, reason := g.check(t, "7", wire("7", now+time.Second.Microseconds()))
	assert.Equal(t, codes.OK, code, reason)
	g.took(t)
	assert.EqualValues(t, 3, g.checks(t, obs.FenceAccepted))
}

// TestGuardRefusesPlainNumbers: a bare number, the token of earlier
// versions, names no key: it is refused FENCE_UNSCOPED (400,
// INVALID_ARGUMENT), counted unscoped (not malformed, not stale), and the
// mark does not move. A store with fence.RedisConfig.PlainTokens admits
// plain tokens, compares them with the mark like any other (a lower one is
// stale), holds them to the clock bound, and still refuses scoped tokens of
// other keys.
func TestGuardRefusesPlainNumbers(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		g := newGuardedLedger(t, fence.RedisConfig{})
		status, reason := g.put(t, "7", "41")
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Equal(t, reasonFenceUnscoped, reason)
		code, reason := g.check(t, "7", "41")
		assert.Equal(t, codes.InvalidArgument, code)
		assert.Equal(t, reasonFenceUnscoped, reason)
		g.ranNone(t)
		assert.Zero(t, g.mark(t, "7"), "a plain token set the mark")
		assert.EqualValues(t, 2, g.checks(t, obs.FenceUnscoped))
		assert.EqualValues(t, 0, g.checks(t, obs.FenceMalformed))
		assert.EqualValues(t, 0, g.rejections(t))

		status, _ = g.put(t, "7", wire("7", 41))
		assert.Equal(t, http.StatusNoContent, status, "the same fence in the wire form is admitted")
		g.took(t)
	})

	t.Run("allowed", func(t *testing.T) {
		g := newGuardedLedger(t, fence.RedisConfig{PlainTokens: true})
		status, reason := g.put(t, "7", "41")
		require.Equal(t, http.StatusNoContent, status, reason)
		assert.Equal(t, fence.Token{Fence: 41}, g.took(t))
		code, reason := g.check(t, "7", "42")
		require.Equal(t, codes.OK, code, reason)
		assert.Equal(t, fence.Token{Fence: 42}, g.took(t))
		assert.EqualValues(t, 42, g.mark(t, "7"))

		status, reason = g.put(t, "7", "40")
		assert.Equal(t, http.StatusConflict, status)
		assert.Equal(t, reasonFenceStale, reason)
		status, reason = g.put(t, "7", "9223372036854775807")
		assert.Equal(t, http.StatusForbidden, status)
		assert.Equal(t, reasonFenceAhead, reason)
		status, reason = g.put(t, "7", wire("8", 43))
		assert.Equal(t, http.StatusForbidden, status)
		assert.Equal(t, reasonFenceForeign, reason)
		g.ranNone(t)
		assert.EqualValues(t, 42, g.mark(t, "7"))

		status, _ = g.put(t, "7", wire("7", 43))
		assert.Equal(t, http.StatusNoContent, status, "a scoped token of the key beside plain ones")
		g.took(t)
		assert.EqualValues(t, 0, g.checks(t, obs.FenceUnscoped))
		assert.EqualValues(t, 3, g.checks(t, obs.FenceAccepted))
		assert.EqualValues(t, 1, g.rejections(t), "only the lower plain token is stale")
	})
}

// TestGuardCountsMalformedTokens: a value that is not one token in the
// wire form is refused FENCE_MALFORMED (400, INVALID_ARGUMENT) by the guard
// itself, with what is wrong as the detail; the store is not called (no
// mark, no other check), and the guard counts it under
// lockwatch_fence_checks_total{result="malformed"}, never as a stale
// write.
func TestGuardCountsMalformedTokens(t *testing.T) {
	g := newGuardedLedger(t, fence.RedisConfig{})
	good := wire("7", 41)
	for _, tc := range []struct {
		name   string
		values []string
	}{
		{"not a number", []string{"+41"}},
		{"zero", []string{"0"}},
		{"zero in the wire form", []string{strings.Replace(good, `"41"`, `"0"`, 1)}},
		{"cut short", []string{good[:len(good)-1]}},
		{"scope of the wrong length", []string{good[:len(good)-4] + "AA==:"}},
		{"kid without mac", []string{good + ";kid=k1"}},
		// Spaces after ';' are allowed: only the length is wrong.
		{"longer than 256 bytes", []string{strings.Replace(good, ";s=", ";"+strings.Repeat(" ", 256)+"s=", 1)}},
		{"two values", []string{good, good}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPut, g.url+"/ledger/7", nil)
			require.NoError(t, err)
			for _, v := range tc.values {
				req.Header.Add(tokenHeader, v)
			}
			resp, err := g.http.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			p := decodeProblem(t, resp)
			assert.Equal(t, reasonFenceMalformed, p.Reason)
			assert.Contains(t, p.Detail, "malformed token", "the detail says what is wrong")
			code, reason := g.check(t, "7", tc.values...)
			assert.Equal(t, codes.InvalidArgument, code)
			assert.Equal(t, reasonFenceMalformed, reason)
			g.ranNone(t)
		})
	}
	assert.Zero(t, g.mark(t, "7"))
	assert.EqualValues(t, 16, g.checks(t, obs.FenceMalformed))
	for _, r := range []obs.FenceResult{obs.FenceAccepted, obs.FenceRejected, obs.FenceUnscoped, obs.FenceForeign, obs.FenceAhead} {
		assert.EqualValues(t, 0, g.checks(t, r), "no %s check: the store was not called", r)
	}
	assert.EqualValues(t, 0, g.rejections(t))

	status, reason := g.put(t, "7", good)
	assert.Equal(t, http.StatusNoContent, status, reason)
	g.took(t)
}

package lease

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// newTestSecrets returns secrets with one fresh random key under id.
func newTestSecrets(t *testing.T, id string) (*fence.Secrets, []byte) {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s, err := fence.NewSecrets(id, map[string][]byte{id: key})
	require.NoError(t, err)
	return s, key
}

// TestLeaseTokenIsScopedToItsKeyAndNamespace: a lease's token names the
// key it was acquired for within the Locker's namespace (fence.ScopeOf of
// the caller's key, not of the Redis keys), so that a resource guarding
// another key, or the same key in another namespace, refuses it as
// foreign; without secrets it is unsigned, and a resource without secrets
// admits it.
func TestLeaseTokenIsScopedToItsKeyAndNamespace(t *testing.T) {
	ctx := testCtx(t)
	c := redistest.Start(t).Client(t)
	lk := newLocker(t, c, Config{})
	ns := lk.set.Namespace
	l, err := lk.Acquire(ctx, "invoice-7")
	require.NoError(t, err)
	defer l.Release(ctx)

	tok := l.Token()
	assert.Equal(t, l.Fence(), tok.Fence)
	assert.False(t, tok.IsPlain())
	assert.Equal(t, fence.ScopeOf(ns, "invoice-7"), tok.Scope)
	assert.NotEqual(t, fence.ScopeOf(ns, "invoice-8"), tok.Scope, "another key, another scope")
	assert.NotEqual(t, fence.ScopeOf(defaultNamespace, "invoice-7"), tok.Scope, "another namespace, another scope")
	assert.Empty(t, tok.KeyID, "unsigned without secrets")
	assert.Zero(t, tok.MAC)
	assert.Equal(t, fence.Mint(ns, "invoice-7", l.Fence(), nil), tok)
	wire, err := fence.Parse(tok.String())
	require.NoError(t, err)
	assert.Equal(t, tok, wire, "the wire form carries the whole token")

	store := fence.NewRedisStore(c, "invoices", fence.RedisConfig{LockNamespace: ns})
	require.NoError(t, store.Write(ctx, "invoice-7", tok, []byte("v")), "a store without secrets admits an unsigned token of its key")
	require.ErrorIs(t, store.Write(ctx, "invoice-8", tok, []byte("v")), fence.ErrForeign, "another key's store refuses it")
	other := fence.NewRedisStore(c, "invoices-default-ns", fence.RedisConfig{})
	require.ErrorIs(t, other.Write(ctx, "invoice-7", tok, []byte("v")), fence.ErrForeign, "the same key in another namespace refuses it")
	signedOnly, _ := newTestSecrets(t, "k1")
	strict := fence.NewRedisStore(c, "invoices-signed", fence.RedisConfig{LockNamespace: ns, Secrets: signedOnly})
	assert.ErrorIs(t, strict.Write(ctx, "invoice-7", tok, []byte("v")), fence.ErrForged, "a store with secrets refuses an unsigned token")
}

// TestLeaseTokenIsSignedWithSecrets: with Config.Secrets a lease's token is
// signed with the active secret: a resource with the same secrets accepts
// it, one with other secrets refuses it as forged. Commit's fn and the
// lease's context (fence.FromContext, which the propagators send) carry
// that same token.
func TestLeaseTokenIsSignedWithSecrets(t *testing.T) {
	ctx := testCtx(t)
	c := redistest.Start(t).Client(t)
	secrets, key := newTestSecrets(t, "k1")
	lk := newLocker(t, c, Config{Secrets: secrets})
	ns := lk.set.Namespace
	l, err := lk.Acquire(ctx, "invoice-7")
	require.NoError(t, err)
	defer l.Release(ctx)

	tok := l.Token()
	assert.Equal(t, l.Fence(), tok.Fence)
	assert.Equal(t, fence.ScopeOf(ns, "invoice-7"), tok.Scope, "signing keeps the scope")
	assert.Equal(t, "k1", tok.KeyID)
	assert.NotZero(t, tok.MAC)
	wire, err := fence.Parse(tok.String())
	require.NoError(t, err)
	assert.Equal(t, tok, wire, "the wire form carries the signature")

	// The resource's own copy of the secrets: the same key bytes.
	same, err := fence.NewSecrets("k1", map[string][]byte{"k1": key})
	require.NoError(t, err)
	store := fence.NewRedisStore(c, "invoices", fence.RedisConfig{LockNamespace: ns, Secrets: same})
	require.ErrorIs(t, store.Write(ctx, "invoice-8", tok, []byte("v")), fence.ErrForeign, "signed, but for another key")

	// Commit's fn gets the lease's token, and the lease's context carries
	// it too: the one a signed-only store admits.
	fromCtx, ok := fence.FromContext(l.Context())
	require.True(t, ok, "the lease's context carries its token")
	assert.Equal(t, tok, fromCtx)
	var inFn, inFnCtx fence.Token
	require.NoError(t, l.Commit(l.Context(), func(wctx context.Context, token fence.Token) error {
		inFn = token
		inFnCtx, _ = fence.FromContext(wctx)
		return store.Write(wctx, "invoice-7", token, []byte("signed"))
	}), "a store with the same secrets accepts the token")
	assert.Equal(t, tok, inFn)
	assert.Equal(t, tok, inFnCtx)
	v, mark, err := store.Read(ctx, "invoice-7")
	require.NoError(t, err)
	assert.Equal(t, "signed", string(v))
	assert.Equal(t, l.Fence(), mark)

	otherKey, _ := newTestSecrets(t, "k1")
	forgedStore := fence.NewRedisStore(c, "invoices-other-key", fence.RedisConfig{LockNamespace: ns, Secrets: otherKey})
	require.ErrorIs(t, forgedStore.Write(ctx, "invoice-7", tok, []byte("v")), fence.ErrForged, "same key id, other secret")
	otherID, _ := newTestSecrets(t, "k2")
	unknownStore := fence.NewRedisStore(c, "invoices-other-id", fence.RedisConfig{LockNamespace: ns, Secrets: otherID})
	require.ErrorIs(t, unknownStore.Write(ctx, "invoice-7", tok, []byte("v")), fence.ErrForged, "unknown key id")
	_, mark, err = forgedStore.Read(ctx, "invoice-7")
	require.NoError(t, err)
	assert.Zero(t, mark, "a refused token moves no mark")
}

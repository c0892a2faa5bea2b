package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
)

// A store under the token tests: one of the four ways a write reaches a
// mark (RedisStore.Write and Admit, Table.Update and Upsert), with a way to
// read the mark back.
type target struct {
	name  string
	write func(ctx context.Context, key string, tok fence.Token) error
	seed  func(ctx context.Context, key string, tok fence.Token) error // makes the key's mark (Update needs a row)
	mark  func(t *testing.T, key string) (int64, bool)
}

// targets returns the four writes of stores made with the given
// configuration, each recording to h under resource "r".
func targets(t *testing.T, h harness, secrets *fence.Secrets, plain bool) []target {
	t.Helper()
	var out []target
	redistest.Require(t)
	{ // one node: the scripts run alike on a cluster (TestRedisStore)
		client := redistest.Start(t).Client(t)
		s := fence.NewRedisStore(client, "r", fence.RedisConfig{Telemetry: h.Tel, Secrets: secrets, PlainTokens: plain})
		mark := func(t *testing.T, key string) (int64, bool) {
			_, m, err := s.Read(testCtx(t), key)
			require.NoError(t, err)
			return m, m != 0
		}
		write := func(ctx context.Context, k string, tok fence.Token) error { return s.Write(ctx, k, tok, []byte("v")) }
		out = append(out,
			target{"redis write", write, write, mark},
			target{"redis admit", func(ctx context.Context, k string, tok fence.Token) error { return s.Admit(ctx, k, tok) }, write, mark})
	}
	for _, b := range sqlBackends {
		db := b.open(t)
		_, err := db.ExecContext(testCtx(t), `CREATE TABLE docs (id `+b.textKey+` PRIMARY KEY, title text, body text, fence bigint NOT NULL)`)
		require.NoError(t, err)
		tbl, err := b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence", Columns: []string{"title"},
			Resource: "r", Secrets: secrets, PlainTokens: plain, Telemetry: h.Tel})
		require.NoError(t, err)
		mark := func(t *testing.T, key string) (int64, bool) {
			var m int64
			err := db.QueryRowContext(testCtx(t), b.sql(`SELECT fence FROM docs WHERE id = $1`), key).Scan(&m)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, false
			}
			require.NoError(t, err)
			return m, true
		}
		upsert := func(ctx context.Context, k string, tok fence.Token) error { return tbl.Upsert(ctx, db, k, tok, "v") }
		out = append(out,
			target{b.name + " upsert", upsert, upsert, mark},
			target{b.name + " update", func(ctx context.Context, k string, tok fence.Token) error { return tbl.Update(ctx, db, k, tok, "v") }, upsert, mark})
	}
	return out
}

// refusedCounts is a resource's fence checks by result.
func refusedCounts(t *testing.T, h harness, resource string) map[obs.FenceResult]int64 {
	t.Helper()
	out := map[obs.FenceResult]int64{}
	for _, r := range obs.FenceResults {
		if n := h.Sum(t, obs.FenceChecks, telemetrytest.Attrs(obs.AttrResource, resource, obs.AttrResult, string(r))); n > 0 {
			out[r] = n
		}
	}
	if n := h.Sum(t, obs.FenceRejections, telemetrytest.Attrs(obs.AttrResource, resource)); n > 0 {
		out["stale-write rejections"] = n
	}
	return out
}

// TestStoresRefuseUntrustedTokens: every store refuses a token of another
// key, another lease namespace, a plain number, and (without secrets) one
// ahead of its clock, each with its own error and result, never as a stale
// write, and leaves the mark where it was.
func TestStoresRefuseUntrustedTokens(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	now := time.Now().UnixMicro()
	base := now - time.Second.Microseconds()
	cases := []struct {
		name   string
		tok    func(key string) fence.Token
		err    error
		result obs.FenceResult
	}{
		{"another key's token", func(string) fence.Token { return fence.Mint("lockwatch", "order-1", now, nil) }, fence.ErrForeign, obs.FenceForeign},
		{"another namespace's token", func(k string) fence.Token { return fence.Mint("billing", k, now, nil) }, fence.ErrForeign, obs.FenceForeign},
		{"a plain number", func(string) fence.Token { return fence.Token{Fence: now} }, fence.ErrUnscoped, obs.FenceUnscoped},
		{"a minute ahead", func(k string) fence.Token { return tk(k, now+time.Minute.Microseconds()) }, fence.ErrAhead, obs.FenceAhead},
		{"2^53 - 1", func(k string) fence.Token { return tk(k, 1<<53-1) }, fence.ErrAhead, obs.FenceAhead},
		{"the int64 maximum", func(k string) fence.Token { return tk(k, 1<<63-1) }, fence.ErrAhead, obs.FenceAhead},
	}
	for _, tg := range targets(t, h, nil, false) {
		t.Run(tg.name, func(t *testing.T) {
			before := refusedCounts(t, h, "r")
			key, fresh := "k "+tg.name, "fresh "+tg.name
			require.NoError(t, tg.seed(ctx, key, tk(key, base)))
			for _, c := range cases {
				err := tg.write(ctx, key, c.tok(key))
				require.ErrorIs(t, err, c.err, c.name)
				require.NotErrorIs(t, err, fence.ErrStale, c.name)
				m, _ := tg.mark(t, key)
				assert.Equal(t, base, m, "%s: the mark did not move", c.name)
			}
			// A key without a mark: a token refused makes none (an
			// upsert's insert is bounded too).
			require.ErrorIs(t, tg.write(ctx, fresh, tk(fresh, 1<<62)), fence.ErrAhead)
			_, found := tg.mark(t, fresh)
			assert.False(t, found, "no mark was made for a refused token")
			after := refusedCounts(t, h, "r")
			want := map[obs.FenceResult]int64{obs.FenceForeign: 2, obs.FenceUnscoped: 1, obs.FenceAhead: 4}
			for r, n := range want {
				assert.Equal(t, n, after[r]-before[r], "counted as %s", r)
			}
			assert.Equal(t, before["stale-write rejections"], after["stale-write rejections"], "never a stale-write rejection")
			assert.Equal(t, before[obs.FenceRejected], after[obs.FenceRejected])
		})
	}
}

// TestStoresRefuseForgedTokens: a store with secrets takes only tokens a
// Locker holding one of them signed, and those whatever their fence; a
// genuine token of another key is still foreign.
func TestStoresRefuseForgedTokens(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	now := time.Now().UnixMicro()
	other, err := fence.NewSecrets("t1", map[string][]byte{"t1": []byte("not-the-secret-the-stores-know-32")})
	require.NoError(t, err)
	for _, tg := range targets(t, h, signing, false) {
		t.Run(tg.name, func(t *testing.T) {
			key := "k " + tg.name
			before := refusedCounts(t, h, "r")
			require.NoError(t, tg.seed(ctx, key, signed(key, now)))
			tampered := signed(key, now)
			tampered.Fence = 1<<63 - 1 // the signature covers the fence
			for name, tok := range map[string]fence.Token{
				"unsigned":            tk(key, now+1),
				"another secret":      fence.Mint("lockwatch", key, now+1, other),
				"a tampered fence":    tampered,
				"a plain number":      {Fence: now + 1},
				"signed, other key's": fence.Mint("lockwatch", "order-1", now+1, signing),
			} {
				err := tg.write(ctx, key, tok)
				require.Error(t, err, name)
				require.NotErrorIs(t, err, fence.ErrStale, name)
				m, _ := tg.mark(t, key)
				assert.Equal(t, now, m, "%s: the mark did not move", name)
			}
			after := refusedCounts(t, h, "r")
			assert.Equal(t, int64(3), after[obs.FenceForged]-before[obs.FenceForged])
			assert.Equal(t, int64(1), after[obs.FenceUnscoped]-before[obs.FenceUnscoped])
			assert.Equal(t, int64(1), after[obs.FenceForeign]-before[obs.FenceForeign])
			assert.Equal(t, before["stale-write rejections"], after["stale-write rejections"])

			require.NoError(t, tg.write(ctx, key, signed(key, 1<<63-1)), "a signed token is not held to the clock")
		})
	}
}

// TestSecretsRotate: a store that knows the old and the new secret takes
// the tokens of Lockers on either, so the Lockers switch one at a time.
func TestSecretsRotate(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	old, err := fence.NewSecrets("old", map[string][]byte{"old": []byte("the-old-secret-of-thirty-two-byte")})
	require.NoError(t, err)
	both, err := fence.NewSecrets("new", map[string][]byte{"old": []byte("the-old-secret-of-thirty-two-byte"), "new": []byte("the-new-secret-of-thirty-two-byte")})
	require.NoError(t, err)
	s := fence.NewRedisStore(redistest.Start(t).Client(t), "rotating", fence.RedisConfig{Secrets: both, Telemetry: newHarness(t).Tel})
	now := time.Now().UnixMicro()
	require.NoError(t, s.Write(ctx, "k", fence.Mint("lockwatch", "k", now, old), nil), "a Locker still on the old secret")
	require.NoError(t, s.Write(ctx, "k", fence.Mint("lockwatch", "k", now+1, both), nil), "one on the new")
	assert.Equal(t, "new", fence.Mint("lockwatch", "k", 1, both).KeyID)
}

// TestClockBound: an unsigned token within the skew of the store's clock is
// taken (clocks disagree a little), one beyond it is not; RedisConfig.MaxSkew and
// TableConfig.MaxSkew move the bound; plain tokens, when allowed, are held
// to it too.
func TestClockBound(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	h := newHarness(t)
	client := redistest.Start(t).Client(t)
	def := fence.NewRedisStore(client, "bound", fence.RedisConfig{Telemetry: h.Tel})
	tight := fence.NewRedisStore(client, "tight", fence.RedisConfig{MaxSkew: time.Second, Telemetry: h.Tel})
	plain := fence.NewRedisStore(client, "plain", fence.RedisConfig{PlainTokens: true, Telemetry: h.Tel})
	now := time.Now().UnixMicro()
	require.NoError(t, def.Write(ctx, "a", tk("a", now+5*time.Second.Microseconds()), nil), "5 s ahead: within the default 10 s")
	require.ErrorIs(t, def.Write(ctx, "b", tk("b", now+20*time.Second.Microseconds()), nil), fence.ErrAhead)
	require.ErrorIs(t, tight.Write(ctx, "a", tk("a", now+5*time.Second.Microseconds()), nil), fence.ErrAhead)
	require.NoError(t, plain.Write(ctx, "a", fence.Token{Fence: now}, nil), "allowed plain")
	require.ErrorIs(t, plain.Write(ctx, "a", fence.Token{Fence: 1<<63 - 1}, nil), fence.ErrAhead, "but bounded")
	require.NoError(t, plain.Write(ctx, "a", tk("a", now+1), nil), "scoped tokens still work beside plain ones")
	require.ErrorIs(t, plain.Write(ctx, "a", tk("x", now+2), nil), fence.ErrForeign)

	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			_, err := db.ExecContext(ctx, `CREATE TABLE docs (id `+b.textKey+` PRIMARY KEY, fence bigint NOT NULL)`)
			require.NoError(t, err)
			tbl, err := b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence", MaxSkew: time.Second, Telemetry: h.Tel})
			require.NoError(t, err)
			now := time.Now().UnixMicro()
			require.NoError(t, tbl.Upsert(ctx, db, "a", tk("a", now)))
			require.ErrorIs(t, tbl.Upsert(ctx, db, "a", tk("a", now+5*time.Second.Microseconds())), fence.ErrAhead, "the database's clock, 1 s")
			require.ErrorIs(t, tbl.Update(ctx, db, "a", tk("a", now+5*time.Second.Microseconds())), fence.ErrAhead)
			require.NoError(t, tbl.Update(ctx, db, "a", tk("a", now+500*time.Millisecond.Microseconds())))

			keyed, err := b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence",
				LockKey: func(id any) string { return "doc:" + id.(string) }, LockNamespace: "app", Telemetry: h.Tel})
			require.NoError(t, err)
			require.ErrorIs(t, keyed.Upsert(ctx, db, "b", tk("b", now)), fence.ErrForeign, "the row key is not the lock key")
			require.NoError(t, keyed.Upsert(ctx, db, "b", fence.Mint("app", "doc:b", now, nil)))
			_, err = b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence", MaxSkew: -time.Second})
			require.Error(t, err)
			_, err = b.newTable(fence.TableConfig{Table: "docs", KeyColumn: "id", FenceColumn: "fence", PlainTokens: true, Secrets: signing})
			require.ErrorContains(t, err, "PlainTokens and Secrets exclude each other")
		})
	}
}

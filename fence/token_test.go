package fence

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testSecrets(t testing.TB, active string, ids ...string) *Secrets {
	t.Helper()
	keys := map[string][]byte{}
	for _, id := range append(ids, active) {
		keys[id] = bytes.Repeat([]byte(id[:1]), 32)
	}
	s, err := NewSecrets(active, keys)
	require.NoError(t, err)
	return s
}

func TestParsePlain(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"1", 1}, {"41", 41}, {"1732867200000000", 1732867200000000}, {"9223372036854775807", 1<<63 - 1}} {
		got, err := Parse(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, Token{Fence: tc.want}, got)
		assert.True(t, got.IsPlain())
		assert.Equal(t, tc.in, got.String(), "canonical form round-trips")
	}
	for _, bad := range []string{"", "0", "00", "041", "-1", "+41", "4 1", "41\n", "0x29", "4.1", "1e3",
		"abc", "41,42", "9223372036854775808", "99999999999999999999", "٤١"} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, ErrMalformed, "%q", bad)
	}
}

// TestWireForm: the form SECURITY.md documents, byte for byte, and back.
func TestWireForm(t *testing.T) {
	tok := Mint("lockwatch", "order-1", 1796123456789012, nil)
	s := tok.String()
	assert.Regexp(t, `^"1796123456789012";s=:[A-Za-z0-9+/]{16}:$`, s)
	got, err := Parse(s)
	require.NoError(t, err)
	assert.Equal(t, tok, got)

	signed := Mint("lockwatch", "order-1", 1796123456789012, testSecrets(t, "k1"))
	s = signed.String()
	assert.Regexp(t, `^"1796123456789012";s=:[A-Za-z0-9+/]{16}:;kid=k1;mac=:[A-Za-z0-9+/]{22}==:$`, s)
	assert.Less(t, len(s), 100)
	got, err = Parse(s)
	require.NoError(t, err)
	assert.Equal(t, signed, got)

	// RFC 9651 lets parameters come in any order, with spaces after ';'.
	scope, mac := s[strings.Index(s, ";s=")+3:strings.Index(s, ";kid")], s[strings.Index(s, ";mac=")+5:]
	got, err = Parse(` "1796123456789012"; mac=` + mac + `;  kid=k1; s=` + scope + ` `)
	require.NoError(t, err)
	assert.Equal(t, signed, got)
}

func TestParseRefusesMalformedWire(t *testing.T) {
	good := Mint("lockwatch", "k", 1796123456789012, testSecrets(t, "k1")).String()
	scope := good[strings.Index(good, ";s=")+3 : strings.Index(good, ";kid")]
	for name, bad := range map[string]string{
		"sf-integer is not the form":  `1796123456789012;s=` + scope,
		"no closing quote":            `"1796123456789012;s=` + scope,
		"leading zero":                `"01796123456789012";s=` + scope,
		"zero":                        `"0";s=` + scope,
		"sign":                        `"+1796123456789012";s=` + scope,
		"overflow":                    `"9223372036854775808";s=` + scope,
		"no scope":                    `"1796123456789012"`,
		"zero scope":                  `"1796123456789012";s=:AAAAAAAAAAAAAAAA:`,
		"short scope":                 `"1796123456789012";s=:AAAAAAAAAAAA:`,
		"long scope":                  `"1796123456789012";s=:AAAAAAAAAAAAAAAAAAAA:`,
		"scope not base64":            `"1796123456789012";s=:!!!!!!!!!!!!!!!!:`,
		"scope not a byte sequence":   `"1796123456789012";s=AAAAAAAAAAAAAAAA`,
		"scope repeated":              `"1796123456789012";s=` + scope + `;s=` + scope,
		"kid without mac":             `"1796123456789012";s=` + scope + `;kid=k1`,
		"mac without kid":             strings.Replace(good, ";kid=k1", "", 1),
		"kid not a token":             strings.Replace(good, "kid=k1", `kid="k1"`, 1),
		"kid uppercase":               strings.Replace(good, "kid=k1", "kid=K1", 1),
		"unknown parameter":           good + ";x=1",
		"boolean parameter":           good + ";x",
		"trailing garbage":            good + " x",
		"a list":                      good + ", " + good,
		"over 256 bytes":              good + strings.Repeat(" ", 257-len(good)),
		"huge":                        strings.Repeat("9", 1<<20),
		"nul byte":                    `"17961234567890` + "\x00" + `2";s=` + scope,
		"escape in the string":        `"1796123456789\"012";s=` + scope,
		"mac one byte short":          strings.Replace(good, "==:", "=:", 1),
		"two tokens in one parameter": `"1796123456789012";s=` + scope + scope,
	} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, ErrMalformed, "%s: %q", name, bad)
	}
}

func TestContext(t *testing.T) {
	_, ok := FromContext(context.Background())
	assert.False(t, ok)
	tok := Mint("lockwatch", "k", 7, nil)
	got, ok := FromContext(NewContext(context.Background(), tok))
	assert.True(t, ok)
	assert.Equal(t, tok, got)
}

// TestScopeOf: one scope per (namespace, key), never shared across
// namespaces, never the key itself.
func TestScopeOf(t *testing.T) {
	a := ScopeOf("lockwatch", "order-1")
	assert.Equal(t, a, ScopeOf("lockwatch", "order-1"))
	assert.NotEqual(t, a, ScopeOf("lockwatch", "order-2"))
	assert.NotEqual(t, a, ScopeOf("other", "order-1"))
	assert.NotEqual(t, ScopeOf("a", "b\x00c"), ScopeOf("a\x00b", "c"), "the separator cannot be forged by a key")
	assert.NotContains(t, Mint("lockwatch", "order-1", 1, nil).String(), "order-1")
	assert.NotEqual(t, Scope{}, a)
}

func TestSecrets(t *testing.T) {
	s := testSecrets(t, "k2", "k1")
	tok := Mint("lockwatch", "k", 42, s)
	assert.Equal(t, "k2", tok.KeyID, "signed with the active secret")
	require.NoError(t, s.verify(tok))
	old := Mint("lockwatch", "k", 41, testSecrets(t, "k1"))
	require.NoError(t, s.verify(old), "a token of the previous secret verifies during a rotation")

	for name, bad := range map[string]Token{
		"unsigned":      Mint("lockwatch", "k", 42, nil),
		"unknown kid":   Mint("lockwatch", "k", 42, testSecrets(t, "k3")),
		"fence changed": {Fence: 43, Scope: tok.Scope, KeyID: tok.KeyID, MAC: tok.MAC},
		"scope changed": {Fence: 42, Scope: ScopeOf("lockwatch", "j"), KeyID: tok.KeyID, MAC: tok.MAC},
		"kid swapped":   {Fence: 42, Scope: tok.Scope, KeyID: "k1", MAC: tok.MAC},
		"other secret, same kid": func() Token {
			other, err := NewSecrets("k2", map[string][]byte{"k2": bytes.Repeat([]byte("x"), 32)})
			require.NoError(t, err)
			return Mint("lockwatch", "k", 42, other)
		}(),
	} {
		require.ErrorIs(t, s.verify(bad), ErrForged, name)
	}
}

func TestNewSecretsRefuses(t *testing.T) {
	key := bytes.Repeat([]byte("a"), 32)
	for name, tc := range map[string]struct {
		active string
		keys   map[string][]byte
	}{
		"active missing": {"k2", map[string][]byte{"k1": key}},
		"short secret":   {"k1", map[string][]byte{"k1": key[:31]}},
		"bad id":         {"K1", map[string][]byte{"K1": key}},
		"empty id":       {"", map[string][]byte{"": key}},
		"long id":        {strings.Repeat("k", 33), map[string][]byte{strings.Repeat("k", 33): key}},
	} {
		_, err := NewSecrets(tc.active, tc.keys)
		require.Error(t, err, name)
	}
	for _, text := range []string{"", "k1", "k1=!!", "k1=" + b64.EncodeToString(key) + ",k1=" + b64.EncodeToString(key)} {
		_, err := ParseSecrets(text)
		require.Error(t, err, "%q", text)
	}
	// A secret where an id belongs (no "id=", its padding read as the
	// separator) is never echoed.
	for _, leaked := range []string{"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0cw=", "abcdefgh=", "abcdefgh=!!"} {
		_, err := ParseSecrets(leaked)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), strings.TrimRight(leaked, "=!"), "%q", leaked)
	}
	s, err := ParseSecrets("k2=" + b64.EncodeToString(key) + ", k1=" + b64.EncodeToString(bytes.Repeat([]byte("b"), 32)))
	require.NoError(t, err)
	assert.Equal(t, "k2", Mint("ns", "k", 1, s).KeyID, "the first is active")
}

// TestPolicy: the order of the checks (tokens.md): a forged token is
// forged whatever its scope; a genuine token of another key is foreign;
// only unsigned tokens are bounded.
func TestPolicy(t *testing.T) {
	s := testSecrets(t, "k1")
	p, err := newPolicy("", s, false, 0)
	require.NoError(t, err)
	bounded, err := p.check("k", Mint("lockwatch", "k", 5, s))
	require.NoError(t, err)
	assert.False(t, bounded, "a signed token needs no clock bound")
	_, err = p.check("k", Mint("lockwatch", "j", 5, s))
	require.ErrorIs(t, err, ErrForeign)
	_, err = p.check("k", Mint("lockwatch", "j", 5, nil))
	require.ErrorIs(t, err, ErrForged, "unsigned: its scope cannot be trusted either")
	_, err = p.check("k", Mint("other", "k", 5, s))
	require.ErrorIs(t, err, ErrForeign, "another lease namespace")
	_, err = p.check("k", Token{Fence: 5})
	require.ErrorIs(t, err, ErrUnscoped)
	_, err = p.check("k", Token{Fence: -1})
	require.ErrorIs(t, err, ErrMalformed)

	_, err = newPolicy("", s, true, 0)
	require.Error(t, err, "plain tokens cannot be signed: they exclude secrets")

	p, err = newPolicy("", nil, false, 0)
	require.NoError(t, err)
	bounded, err = p.check("k", Mint("lockwatch", "k", 5, s))
	require.NoError(t, err)
	assert.True(t, bounded, "a store without secrets bounds every token")
	p.plain = true
	bounded, err = p.check("k", Token{Fence: 5})
	require.NoError(t, err)
	assert.True(t, bounded, "a plain token is unsigned")
	assert.Equal(t, "10000000", p.skewArg(true))
	assert.Empty(t, p.skewArg(false))
}

// FuzzParse: Parse accepts a plain token exactly in the canonical decimal
// form, anything it accepts formats back to what it read (up to the
// spaces and parameter order RFC 9651 allows), and it never panics.
func FuzzParse(f *testing.F) {
	signed := Mint("lockwatch", "k", 1796123456789012, testSecrets(f, "k1")).String()
	for _, s := range []string{"41", "0", "-1", "+1", " 1", "9223372036854775807", "9223372036854775808", "01", "",
		Mint("lockwatch", "k", 41, nil).String(), signed, signed + ";x=1", `"1";s=:`, `"1";s=::;mac=:`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Parse(s)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		require.Positive(t, tok.Fence)
		if tok.IsPlain() {
			n, perr := strconv.ParseInt(strings.Trim(s, " "), 10, 64)
			require.True(t, perr == nil && strconv.FormatInt(n, 10) == strings.Trim(s, " "), "accepted the non-canonical %q", s)
		}
		again, err := Parse(tok.String())
		require.NoError(t, err)
		require.Equal(t, tok, again)
	})
}

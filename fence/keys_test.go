package fence

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzRedisKey: whatever the caller's key, the Redis key is bounded, has
// exactly one hash tag (the key's hash, so the caller cannot choose the
// slot), and distinct keys get distinct Redis keys.
func FuzzRedisKey(f *testing.F) {
	for _, seed := range [][2]string{
		{"", "a"}, {"{x}", "x"}, {"}{", "{}"}, {"{", "}"}, {"a{b}c", "a{c}b"},
		{"tenant-7", "tenant-8"}, {strings.Repeat("k", 1<<12), strings.Repeat("k", 1<<12+1)}, {"\x00", "\x00\x00"},
	} {
		f.Add(seed[0], seed[1])
	}
	s := &RedisStore{prefix: defaultNamespace + ":" + "ledger" + ":"}
	want := len(s.prefix) + 2 + 32
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := s.redisKey(a), s.redisKey(b)
		for _, k := range []string{ka, kb} {
			require.Len(t, k, want, "bounded: %q", k)
			require.True(t, strings.HasPrefix(k, s.prefix))
			require.Equal(t, 1, strings.Count(k, "{"), "one hash tag: %q", k)
			require.Equal(t, 1, strings.Count(k, "}"), "one hash tag: %q", k)
			// Redis Cluster hashes what lies between the first { and the
			// first } after it: here, the 32 hex digits of the hash.
			open := strings.IndexByte(k, '{')
			end := strings.IndexByte(k[open:], '}') + open
			tag := k[open+1 : end]
			require.Len(t, tag, 32)
			require.Empty(t, strings.Trim(tag, "0123456789abcdef"), "hex: %q", tag)
			require.Equal(t, len(k)-1, end, "the tag ends the key")
		}
		if a != b {
			require.NotEqual(t, ka, kb, "%q and %q", a, b)
		} else {
			require.Equal(t, ka, kb, "deterministic")
		}
	})
}

// An invalid resource or namespace is named once, with one package prefix.
func TestInvalidNamesSayWhatOnce(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer func() { _ = c.Close() }()
	for _, tc := range []struct {
		resource string
		cfg      RedisConfig
		want     string
	}{
		{"has space", RedisConfig{}, `fence: NewRedisStore: resource "has space": byte 3 (' ') is not printable ASCII without spaces or braces`},
		{"ok", RedisConfig{Namespace: string(make([]byte, 65))}, "fence: NewRedisStore: Namespace must be 1 to 64 bytes, got 65"},
	} {
		assert.PanicsWithValue(t, tc.want, func() { NewRedisStore(c, tc.resource, tc.cfg) })
	}
}

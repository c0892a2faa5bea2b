package lease

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisKeys returns a lease's lock and fence keys.
func redisKeys(namespace, key string) (lock, fence string) {
	k := keysOf(namespace, key)
	return k.Lock, k.Fence
}

var derivedKey = regexp.MustCompile(`^([!-z|~]+):\{([0-9a-f]{32})\}:([lfqe])$`)

func TestRedisKeysShape(t *testing.T) {
	k := keysOf("lockwatch", "{user}:42")
	lock := k.Lock
	for name, suffix := range map[string]string{k.Lock: ":l", k.Fence: ":f", k.Queue: ":q", k.Entries: ":e"} {
		assert.Regexp(t, derivedKey, name)
		assert.True(t, strings.HasSuffix(name, suffix), "%s ends in %s", name, suffix)
		assert.Equal(t, lock[:len(lock)-1], name[:len(name)-1], "one hash tag for the four names")
	}
	assert.NotContains(t, lock, "user", "the caller key never appears in Redis")

	a, _ := redisKeys("a", "b:c")
	b, _ := redisKeys("a:b", "c")
	assert.NotEqual(t, a, b, "namespace and key boundaries cannot be shifted")
}

// FuzzRedisKeys: whatever the caller key, the Redis keys are bounded, carry
// exactly our hash tag, and differ for different keys.
func FuzzRedisKeys(f *testing.F) {
	for _, seed := range []string{"", "{", "}", "{}", "{a}", "}{a}{", "\x00", strings.Repeat("x", 4096), "ключ"} {
		f.Add(seed)
	}
	const ns = "ns"
	other, _ := redisKeys(ns, "a fixed other key")
	f.Fuzz(func(t *testing.T, key string) {
		lock, fence := redisKeys(ns, key)
		m := derivedKey.FindStringSubmatch(lock)
		require.NotNil(t, m, "lock key %q", lock)
		assert.Equal(t, ns, m[1])
		assert.Equal(t, 1, strings.Count(lock, "{"))
		assert.Equal(t, 1, strings.Count(lock, "}"))
		assert.Equal(t, lock[:len(lock)-1], fence[:len(fence)-1])
		assert.Equal(t, keySlot(lock), keySlot(fence))
		if key != "a fixed other key" {
			assert.NotEqual(t, other, lock)
		}
	})
}

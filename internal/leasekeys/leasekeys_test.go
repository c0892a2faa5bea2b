package leasekeys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOf(t *testing.T) {
	k := Of("lockwatch", "{user}:42")
	names := map[string]string{
		k.Lock: ":l", k.Fence: ":f", k.Queue: ":q", k.Entries: ":e", k.Channel: ":r",
	}
	assert.Len(t, names, 5, "five names, each its own")
	prefix := k.Lock[:len(k.Lock)-1]
	for name, suffix := range names {
		assert.Equal(t, prefix+suffix[1:], name, "one hash tag for the five names")
		assert.True(t, strings.HasSuffix(name, suffix))
	}
	assert.Equal(t, "lockwatch:{", prefix[:len("lockwatch:{")])
	assert.Equal(t, HashTag(k.Lock), HashTag(k.Entries))
	assert.NotContains(t, k.Queue, "user", "the caller key never appears in Redis")

	long := strings.Repeat("n", MaxNamespace)
	assert.Equal(t, long+":{", Of(long, strings.Repeat("k", 4096)).Channel[:MaxNamespace+2])
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _ = Of(long, "k") }), 1.0, "one allocation")
}

package leasekeys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOf(t *testing.T) {
	k := Of("lockwatch", "{user}:42")
	names := map[string]string{
		k.Lock: ":l", k.Fence: ":f", k.Queue: ":q", k.Entries: ":e",
	}
	assert.Len(t, names, 4, "four names, each its own")
	prefix := k.Lock[:len(k.Lock)-1]
	for name, suffix := range names {
		assert.Equal(t, prefix+suffix[1:], name, "one hash tag for the four names")
		assert.True(t, strings.HasSuffix(name, suffix))
	}
	assert.Equal(t, "lockwatch:{", prefix[:len("lockwatch:{")])
	assert.Equal(t, HashTag(k.Lock), HashTag(k.Entries))
	assert.NotContains(t, k.Queue, "user", "the caller key never appears in Redis")

	long := strings.Repeat("n", MaxNamespace)
	assert.Equal(t, long+":{", Of(long, strings.Repeat("k", 4096)).Entries[:MaxNamespace+2])
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _ = Of(long, "k") }), 1.0, "one allocation")
}

func TestGrantChannel(t *testing.T) {
	ch := GrantChannel("lockwatch", "abc")
	assert.Equal(t, "lockwatch:{abc}:g", ch)
	assert.True(t, strings.HasPrefix(ch, "lockwatch:{"), "under the lease's ACL channel pattern")
	assert.Equal(t, "abc", ch[strings.IndexByte(ch, '{')+1:strings.IndexByte(ch, '}')], "its own hash tag")
}

func TestOfSlot(t *testing.T) {
	k, s3 := Of("lockwatch", "exports"), OfSlot("lockwatch", "exports", 3)
	assert.Equal(t, k.Lock+"#3", s3.Lock)
	assert.Equal(t, k.Entries+"#3", s3.Entries)
	assert.Equal(t, HashTag(k.Lock), HashTag(s3.Queue), "one hash tag for every permit of a key")
	seen := map[string]bool{k.Lock: true, k.Fence: true, k.Queue: true, k.Entries: true}
	for slot := 0; slot < 12; slot++ {
		s := OfSlot("lockwatch", "exports", slot)
		for _, name := range []string{s.Lock, s.Fence, s.Queue, s.Entries} {
			assert.False(t, seen[name], "%s is the name of one thing only", name)
			seen[name] = true
		}
	}
}

func TestOfHash(t *testing.T) {
	k := Of("lockwatch", "order:o2")
	h := HashTag(k.Lock)
	require.True(t, ValidHash(h))
	assert.Equal(t, k, OfHash("lockwatch", h), "the hash names what the key names")
	assert.Equal(t, OfSlot("lockwatch", "order:o2", 5), OfHash("lockwatch", h).Slot(5))
	for _, bad := range []string{"", h[:31], h + "0", strings.ToUpper(h), "g" + h[1:]} {
		assert.False(t, ValidHash(bad), "%q", bad)
	}
}

func TestSlotOf(t *testing.T) {
	for _, slot := range []int{0, 3, 63} {
		got, ok := SlotOf(OfSlot("lockwatch", "exports#7", slot).Lock)
		assert.True(t, ok)
		assert.Equal(t, slot, got)
	}
	_, ok := SlotOf(Of("lockwatch", "exports#7").Lock)
	assert.False(t, ok, "a key's own lease, whatever its key")
}

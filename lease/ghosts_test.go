package lease

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/suspend"
)

// A ghost is remembered while its lock can still be held: for two TTLs
// when that is longer than ghostLife.
func TestGhostsOutliveALongTTL(t *testing.T) {
	var g ghosts
	g.add("long", "A", 20*time.Minute)
	g.add("short", "B", time.Second)
	suspend.Emulate(ghostLife + time.Minute)
	assert.Equal(t, []string{"A"}, g.of("long"), "a ghost of a 20-minute lease is still remembered")
	assert.Empty(t, g.of("short"))
}

// A brownout puts many keys in the registry while every acquire asks for
// its key's ghosts: forgotten keys are swept, so the map stays within twice
// the keys still remembered (plus the first sweep's threshold) once their
// life has passed.
func TestGhostsAreSwept(t *testing.T) {
	var g ghosts
	const n = 5000
	for i := range n {
		g.add("old"+strconv.Itoa(i), "A", time.Second)
	}
	suspend.Emulate(ghostLife + time.Second)
	for i := range n / 10 {
		g.add("new"+strconv.Itoa(i), "B", time.Second)
	}
	require.LessOrEqual(t, len(g.byKey), 2*(n/10)+ghostMinSweep, "forgotten keys were not swept")
	assert.Equal(t, []string{"B"}, g.of("new0"))
	assert.Empty(t, g.of("old0"))
}

// At most ghostsPerKey of a key's newest ghosts are kept, and a definite
// answer forgets the ones it barred.
func TestGhostsPerKey(t *testing.T) {
	var g ghosts
	for i := range ghostsPerKey + 3 {
		g.add("k", strconv.Itoa(i), time.Second)
	}
	owners := g.of("k")
	require.Len(t, owners, ghostsPerKey)
	assert.Equal(t, "3", owners[0], "the oldest were dropped")
	g.barred("k", owners[:2])
	assert.Equal(t, owners[2:], g.of("k"))
	g.barred("k", owners)
	assert.Empty(t, g.byKey, "a key without ghosts leaves the map")
}

package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForceReleaseOfUnseenKey: release --force of a key Redis has nothing
// of (a mistyped one), by key, by hash, of a permit, with or without
// --holder, changes nothing, warns on stderr as inspect does and exits 66;
// Redis still has nothing of the key after it. A key seen and free exits 1
// (testForceRelease).
func TestForceReleaseOfUnseenKey(t *testing.T) {
	t.Parallel()
	r := "--redis=" + sharedAddr
	hash := strings.Repeat("0", 32)
	for _, args := range [][]string{
		{"--key", "o2"},
		{"--key", "o2", "--holder", "000000000000"},
		{"--key-hash", hash},
		{"--key", "o2", "--permit", "3"},
	} {
		code, stdout, stderr := lockwatchRun(t, append([]string{"release", "--force", r}, args...)...)
		require.Equal(t, exitNeverSeen, code, "%v: %s", args, stderr)
		if !slices.Contains(args, "--holder") {
			assertOneLine(t, stderr) // with it, the Locker's Warn log of a force that changed nothing comes first
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		assert.Contains(t, last, "Redis has nothing of it in namespace lockwatch", args)
		assert.Contains(t, last, "a mistyped key? nothing changed", args)
		assert.Contains(t, stdout, "was not held: nothing changed (fence 0)", args)
	}
	inspectUnseen(t, r, "--key", "o2")
	inspectUnseen(t, r, "--key", "o2", "--permit", "3")
	inspectUnseen(t, r, "--key-hash", hash)
}

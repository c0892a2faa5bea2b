package debugpage_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/browsertest"
	"github.com/lockwatch/lockwatch/lease"
)

// screenshotEnv names a path where TestInBrowser also writes its
// screenshot, for a developer to look at.
const screenshotEnv = "LOCKWATCH_SCREENSHOT"

// TestInBrowser loads the page in headless Chromium while leases are held
// and one was lost: the table in the DOM Chromium rendered has the
// snapshot's rows (names, fences, the hostile name as text, the command
// that inspects each key by its hash), and the screenshot is a painted
// PNG of the window's size.
func TestInBrowser(t *testing.T) {
	browsertest.Chromium(t) // skip (or fail in CI) before starting anything
	f := newFixture(t, 2*time.Second, true)
	held := []*lease.Lease{
		f.acquire(t, "invoices", "invoice:42"),
		f.acquire(t, "invoices", "invoice:43"),
		f.acquire(t, "reports", "report:2026-11"),
		f.acquire(t, `<b>hostile</b>`, `"><script>alert(1)</script>`),
	}
	gone := f.acquire(t, "payouts", "payout:7")
	f.forceRelease(t, "payout:7")
	require.Equal(t, lease.LossForceReleased, lostWith(t, gone, 5*time.Second))

	dom := browsertest.DumpDOM(t, f.url(""))
	snap := f.locker.Snapshot()
	require.Len(t, snap.Leases, len(held))
	leases, ok := parseTable(t, dom, "leases")
	require.True(t, ok, "no leases table in the rendered DOM:\n%s", dom)
	var names, fences, keys, commands []string
	for _, l := range snap.Leases {
		names = append(names, l.Name)
		fences = append(fences, strconv.FormatInt(l.Fence, 10))
		keys = append(keys, l.Key)
		commands = append(commands, "lockwatch inspect --key-hash "+keyHash("lockwatch", l.Key))
	}
	assert.Equal(t, names, leases.col(t, "lock name"))
	assert.Equal(t, fences, leases.col(t, "fence"))
	assert.Equal(t, keys, leases.col(t, "key"))
	assert.Equal(t, commands, leases.col(t, "in Redis"), "the key's hash, in the default namespace")
	for _, s := range leases.col(t, "state") {
		assert.Contains(t, []string{"held", "renewing"}, s)
	}
	assert.NotContains(t, dom, "<script>alert", "the hostile key is text, not an element")
	assert.NotContains(t, dom, "<b>hostile", "the hostile name is text, not an element")
	losses, ok := parseTable(t, dom, "losses")
	require.True(t, ok)
	assert.Equal(t, []string{"payouts"}, losses.col(t, "lock name"))
	assert.Equal(t, []string{strconv.FormatInt(gone.Fence(), 10)}, losses.col(t, "fence"))
	assert.Equal(t, []string{"force_released"}, losses.col(t, "reason"))
	assert.Equal(t, []string{"lockwatch inspect --key-hash " + keyHash("lockwatch", "payout:7")}, losses.col(t, "in Redis now"))
	assert.True(t, strings.HasPrefix(dom, "<!DOCTYPE html>") || strings.HasPrefix(dom, "<html"), "a rendered document")

	const width, height = 1200, 800
	png := browsertest.Screenshot(t, f.url(""), width, height)
	_, err := browsertest.Painted(png, width, height)
	require.NoError(t, err)
	if path := os.Getenv(screenshotEnv); path != "" {
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot written to %s", path)
	}
}

package debugpage_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/lease"
)

// TestJSONActiveLeases: the JSON lists the leases really held on Redis,
// field by field under the documented names, and their renewals grow.
func TestJSONActiveLeases(t *testing.T) {
	const ttl = 600 * time.Millisecond
	f := newFixture(t, ttl, false)
	reports := f.acquire(t, "reports", "report:7")
	invoices := f.acquire(t, "invoices", "invoice:42")

	p, body := f.json(t)
	assert.WithinDuration(t, time.Now(), p.Taken, 5*time.Second)
	assert.Empty(t, p.Losses)
	assert.Contains(t, body, `"losses": []`, "an empty list, not null")
	require.Len(t, p.Leases, 2)
	snap := f.locker.Snapshot()
	for i, want := range []*lease.Lease{invoices, reports} { // by lock name
		got := p.Leases[i]
		assert.Equal(t, []string{"invoices", "reports"}[i], got.Name)
		assert.Equal(t, snap.Leases[i].KeyHash, got.KeyHash)
		assert.NotEmpty(t, got.KeyHash)
		assert.Empty(t, got.Key, "no raw key without telemetry.Config.RawKeys")
		assert.Equal(t, want.Fence(), got.Fence)
		assert.Contains(t, []string{"held", "renewing"}, got.State)
		assert.Positive(t, got.AgeMS)
		assert.Positive(t, got.RemainingMS)
		assert.LessOrEqual(t, got.RemainingMS, float64(ttl.Milliseconds()))
		assert.InDelta(t, float64(ttl.Milliseconds()), got.TTLMS, 0)
		// The holder is the one Redis has: what release --force --holder takes.
		seen, err := f.locker.Inspect(testCtx(t), want.Key())
		require.NoError(t, err)
		assert.Equal(t, seen.Holder, got.Holder)
		assert.Equal(t, seen.KeyHash, got.KeyHash)
	}
	var raw struct {
		Leases []map[string]any `json:"leases"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &raw))
	var names []string
	for k := range raw.Leases[0] {
		names = append(names, k)
	}
	assert.ElementsMatch(t, []string{"name", "key_hash", "namespace", "fence", "holder", "state", "ttl_ms", "age_ms", "remaining_ms", "renewals", "last_renewal_ms"}, names)

	// Renewals every TTL/3: the counts grow, with a latency.
	require.Eventually(t, func() bool {
		p, _ := f.json(t)
		return len(p.Leases) == 2 && p.Leases[0].Renewals >= 2 && p.Leases[1].Renewals >= 2
	}, 10*time.Second, 20*time.Millisecond)
	p, _ = f.json(t)
	for _, got := range p.Leases {
		assert.Positive(t, got.LastRenewalMS)
		assert.Less(t, got.LastRenewalMS, float64(ttl.Milliseconds()))
		assert.Greater(t, got.AgeMS, float64(ttl.Milliseconds()/3))
	}
}

// TestLossForceRelease: an operator force-releases a held key; the
// holder's next renewal is rejected, and the page lists the loss with its
// reason, its fence, when it was lost and for how long it had been held.
func TestLossForceRelease(t *testing.T) {
	const ttl = 600 * time.Millisecond
	f := newFixture(t, ttl, false)
	l := f.acquire(t, "invoices", "invoice:42")
	before := time.Now()
	f.forceRelease(t, "invoice:42")
	require.Equal(t, lease.LossForceReleased, lostWith(t, l, 5*time.Second))

	require.Eventually(t, func() bool { p, _ := f.json(t); return len(p.Losses) == 1 }, 5*time.Second, 10*time.Millisecond)
	p, _ := f.json(t)
	assert.Empty(t, p.Leases)
	lost := p.Losses[0]
	assert.Equal(t, "invoices", lost.Name)
	assert.Equal(t, "force_released", lost.Reason)
	assert.Equal(t, l.Fence(), lost.Fence)
	assert.NotEmpty(t, lost.KeyHash)
	assert.Empty(t, lost.Key)
	assert.False(t, lost.LostAt.Before(before.Add(-time.Second)), "lost_at %v, force release at %v", lost.LostAt, before)
	assert.WithinDuration(t, time.Now(), lost.LostAt, 5*time.Second)
	assert.Positive(t, lost.HeldMS)

	html := f.html(t)
	assert.Contains(t, html, "No leases held.")
	losses, ok := parseTable(t, html, "losses")
	require.True(t, ok, html)
	assert.Equal(t, []string{"force_released"}, losses.col(t, "reason"))
	assert.Equal(t, []string{strconv.FormatInt(l.Fence(), 10)}, losses.col(t, "fence"))
	assert.Equal(t, []string{"invoices"}, losses.col(t, "lock name"))
	assert.Contains(t, losses.col(t, "lost at")[0], " ago)")
}

// TestRawKeysOnlyWithOptIn: the raw key is on the page and in the JSON
// only with telemetry.Config.RawKeys; without it the key's text appears
// nowhere, neither for an active lease nor for a lost one.
func TestRawKeysOnlyWithOptIn(t *testing.T) {
	const key = "tenant-secret-8812"
	for _, tc := range []struct {
		name string
		raw  bool
	}{
		{"default", false},
		{"RawKeys", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, time.Second, tc.raw)
			f.acquire(t, "tenants", key)
			lost := f.acquire(t, "tenants", key+"-lost")
			f.forceRelease(t, key+"-lost")
			lostWith(t, lost, 5*time.Second)
			require.Eventually(t, func() bool { p, _ := f.json(t); return len(p.Losses) == 1 }, 5*time.Second, 10*time.Millisecond)

			p, body := f.json(t)
			html := f.html(t)
			require.Len(t, p.Leases, 1)
			leases, ok := parseTable(t, html, "leases")
			require.True(t, ok)
			losses, ok := parseTable(t, html, "losses")
			require.True(t, ok)
			if !tc.raw {
				assert.NotContains(t, body, key)
				assert.NotContains(t, html, key)
				assert.NotContains(t, leases.header, "key")
				return
			}
			assert.Equal(t, key, p.Leases[0].Key)
			assert.Equal(t, key+"-lost", p.Losses[0].Key)
			assert.Equal(t, []string{key}, leases.col(t, "key"))
			assert.Equal(t, []string{key + "-lost"}, losses.col(t, "key"))
			assert.Equal(t, []string{p.Leases[0].KeyHash}, leases.col(t, "key hash"), "the hash too")
		})
	}
}

// TestHostileNamesEscaped: a lock name and a key made of markup are shown
// as text: escaped in the HTML (the browser test reads them back), and
// escaped in the JSON too.
func TestHostileNamesEscaped(t *testing.T) {
	const name = `<script>alert("name")</script>`
	const key = `"><img src=x onerror=alert(1)>&amp;`
	f := newFixture(t, time.Second, true)
	f.acquire(t, name, key)

	html := f.html(t)
	assert.NotContains(t, html, "<script")
	assert.NotContains(t, html, "<img")
	assert.Contains(t, html, "&lt;script&gt;")
	leases, ok := parseTable(t, html, "leases")
	require.True(t, ok)
	assert.Equal(t, []string{name}, leases.col(t, "lock name"), "the text, unchanged")
	assert.Equal(t, []string{key}, leases.col(t, "key"))

	p, body := f.json(t)
	assert.NotContains(t, body, "<script")
	assert.NotContains(t, body, "<img")
	require.Len(t, p.Leases, 1)
	assert.Equal(t, name, p.Leases[0].Name)
	assert.Equal(t, key, p.Leases[0].Key)
}

// TestEmpty: with nothing held or lost, the page says so, and the JSON has
// empty lists.
func TestEmpty(t *testing.T) {
	f := newFixture(t, time.Second, false)
	html := f.html(t)
	assert.Contains(t, html, "No leases held.")
	assert.Contains(t, html, "No leases lost.")
	_, ok := parseTable(t, html, "leases")
	assert.False(t, ok, "no empty table")
	_, body := f.json(t)
	assert.Contains(t, body, `"leases": []`)
	assert.Contains(t, body, `"losses": []`)
}

// TestReadOnly: GET and HEAD only; anything else is 405 with Allow, and
// the page has no form or button.
func TestReadOnly(t *testing.T) {
	f := newFixture(t, time.Second, false)
	f.acquire(t, "invoices", "invoice:42")
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		resp, _ := f.get(t, method, f.url(""))
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"), method)
	}
	l := f.locker.Snapshot().Leases
	require.Len(t, l, 1, "a POST changed nothing")

	resp, body := f.get(t, http.MethodHead, f.url(""))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, body)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))

	resp, _ = f.get(t, http.MethodGet, f.url("?format=xml"))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	html := strings.ToLower(f.html(t))
	for _, tag := range []string{"<form", "<button", "<input", "<script", "<link", "<iframe"} {
		assert.NotContains(t, html, tag)
	}
}

// TestHeaders: no caching, no sniffing, no framing, and a policy that
// forbids scripts and every external load, on both formats.
func TestHeaders(t *testing.T) {
	f := newFixture(t, time.Second, false)
	for _, q := range []string{"", "?format=json"} {
		resp, _ := f.get(t, http.MethodGet, f.url(q))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		h := resp.Header
		assert.Equal(t, "no-store", h.Get("Cache-Control"), q)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), q)
		assert.Equal(t, "DENY", h.Get("X-Frame-Options"), q)
		csp := h.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'", q)
		assert.Contains(t, csp, "frame-ancestors 'none'", q)
		assert.Contains(t, csp, "style-src 'unsafe-inline'", q)
		assert.NotContains(t, csp, "script-src", q)
		assert.NotContains(t, csp, "http", q)
	}
	resp, _ := f.get(t, http.MethodPost, f.url(""))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "on refusals too")
}

// TestPageRefreshesItself: the documented meta refresh, every 2 seconds,
// and readable durations in the table.
func TestPageRefreshesItself(t *testing.T) {
	f := newFixture(t, 30*time.Second, false) // no renewal before the page is read
	f.acquire(t, "invoices", "invoice:42")
	html := f.html(t)
	assert.Contains(t, html, `<meta http-equiv="refresh" content="2">`)
	leases, ok := parseTable(t, html, "leases")
	require.True(t, ok)
	assert.Regexp(t, `^\d+(\.\d+)?(µs|ms|s)$`, leases.col(t, "validity left")[0])
	assert.Regexp(t, `^\d+(\.\d+)?(µs|ms|s)$`, leases.col(t, "age")[0])
	assert.Equal(t, "–", leases.col(t, "last renewal")[0], "before the first renewal")
}

func TestHandlerNilLocker(t *testing.T) {
	assert.PanicsWithValue(t, "debugpage: nil Locker", func() { debugpage.Handler(nil) })
}

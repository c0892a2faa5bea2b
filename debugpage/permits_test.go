package debugpage_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/browsertest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
	"github.com/lockwatch/lockwatch/telemetry"
)

// permit takes a permit of key's semaphore on lk (nil: f's Locker), named
// name, released when the test ends.
func (f *fixture) permit(t *testing.T, lk *lease.Locker, name, key string) *permits.Permit {
	t.Helper()
	if lk == nil {
		lk = f.locker
	}
	s, err := permits.New(lk, key, permits.Config{Limit: 3, Name: name})
	require.NoError(t, err)
	p, err := s.Acquire(testCtx(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Release(context.Background()) })
	return p
}

// TestPermits: the page lists the permits the process holds, from any
// Locker, with the key's hash (the one its leases show) and not the raw
// key, in the JSON and in the HTML; a released or lost permit leaves the
// list.
func TestPermits(t *testing.T) {
	f := newFixture(t, 2*time.Second, false)
	p, body := f.json(t)
	assert.Empty(t, p.Permits)
	assert.Contains(t, body, `"permits": []`, "an empty list, not null")
	assert.Contains(t, f.html(t), `id="no-permits"`)

	before := time.Now()
	a := f.permit(t, nil, "exports", "exports:daily")
	b := f.permit(t, nil, "exports", "exports:daily")
	other := lease.NewLocker(f.srv.Client(t), lease.Config{Telemetry: telemetry.New(telemetry.Config{Logger: quiet})})
	t.Cleanup(func() { _ = other.Close() })
	c := f.permit(t, other, "imports", "imports:daily") // another Locker: the process's permits are listed

	p, body = f.json(t)
	require.Len(t, p.Permits, 3, body)
	first, second := a, b
	if b.Index < a.Index {
		first, second = b, a
	}
	hash := keyHashOf(t, p, "exports")
	want := []permitJSON{
		{Semaphore: "exports", KeyHash: hash, Namespace: "lockwatch", Index: first.Index, Fence: first.Fence()},
		{Semaphore: "exports", KeyHash: hash, Namespace: "lockwatch", Index: second.Index, Fence: second.Fence()},
		{Semaphore: "imports", Namespace: "lockwatch", Index: c.Index, Fence: c.Fence()},
	}
	for i, got := range p.Permits {
		assert.False(t, got.Since.Before(before), "held since its Acquire")
		got.Since = time.Time{}
		if want[i].KeyHash == "" {
			assert.Len(t, got.KeyHash, 32, "the key's hash")
			assert.NotEqual(t, hash, got.KeyHash, "another key's hash")
			got.KeyHash = ""
		}
		assert.Equal(t, want[i], got, "by semaphore, then index; no raw key")
	}
	assert.NotContains(t, body, "exports:daily", "the raw key is not shown")

	rows, ok := parseTable(t, f.html(t), "permits")
	require.True(t, ok)
	assert.Equal(t, []string{"exports", "exports", "imports"}, rows.col(t, "semaphore"))
	assert.Equal(t, []string{strconv.Itoa(first.Index), strconv.Itoa(second.Index), strconv.Itoa(c.Index)}, rows.col(t, "permit"))
	assert.Equal(t, strconv.FormatInt(first.Fence(), 10), rows.col(t, "fence")[0])
	assert.Equal(t, hash, rows.col(t, "key hash")[0])

	require.NoError(t, a.Release(testCtx(t)))
	p, _ = f.json(t)
	require.Len(t, p.Permits, 2)
	assert.Equal(t, b.Index, p.Permits[0].Index, "the released permit left the list")

	require.NoError(t, other.Close()) // loses c, with reason closed
	require.Eventually(t, func() bool { p, _ := f.json(t); return len(p.Permits) == 1 }, 5*time.Second, 5*time.Millisecond,
		"the lost permit left the list")
}

// keyHashOf is the key hash of the active lease of lock name name: a
// permit's lease shows its semaphore key's hash.
func keyHashOf(t *testing.T, p page, name string) string {
	t.Helper()
	i := slices.IndexFunc(p.Leases, func(l leaseJSON) bool { return l.Name == name })
	require.GreaterOrEqual(t, i, 0, "no lease named %s", name)
	return p.Leases[i].KeyHash
}

// TestPermitsRawKeys: with RawKeys, a permit shows its semaphore's key.
func TestPermitsRawKeys(t *testing.T) {
	f := newFixture(t, 2*time.Second, true)
	f.permit(t, nil, "exports", "exports:daily")
	p, _ := f.json(t)
	require.Len(t, p.Permits, 1)
	assert.Equal(t, "exports:daily", p.Permits[0].Key)
	rows, ok := parseTable(t, f.html(t), "permits")
	require.True(t, ok)
	assert.Equal(t, []string{"exports:daily"}, rows.col(t, "key"))
}

// TestPermitsInBrowser: Chromium renders the permits' table, each row
// with the command that inspects its permit by the key hash it shows.
func TestPermitsInBrowser(t *testing.T) {
	browsertest.Chromium(t)
	f := newFixture(t, 2*time.Second, false)
	p := f.permit(t, nil, "relay", "relay:out")
	rows, ok := parseTable(t, browsertest.DumpDOM(t, f.url("")), "permits")
	require.True(t, ok)
	assert.Equal(t, []string{"relay"}, rows.col(t, "semaphore"))
	assert.Equal(t, []string{strconv.Itoa(p.Index)}, rows.col(t, "permit"))
	assert.Equal(t, []string{strconv.FormatInt(p.Fence(), 10)}, rows.col(t, "fence"))
	hash := rows.col(t, "key hash")[0]
	assert.Equal(t, keyHash("lockwatch", "relay:out"), hash)
	assert.Equal(t, []string{"lockwatch inspect --key-hash " + hash + " --permit " + strconv.Itoa(p.Index)}, rows.col(t, "in Redis"))
}

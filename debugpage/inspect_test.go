package debugpage_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/lease"
)

// TestInspectCommandNamesNamespace: a lease, a loss or a permit of a
// Locker with a namespace of its own shows the namespace in the JSON and
// names it in its row's command, which lockwatch inspect needs to find the
// key's names (the hash is the namespace's too); a permit's lease shows
// its permit, in the JSON and in its row's command.
func TestInspectCommandNamesNamespace(t *testing.T) {
	f := newFixture(t, 2*time.Second, false)
	billing, err := f.locker.With(lease.Config{Namespace: "billing", Name: "invoices"})
	require.NoError(t, err)
	l, err := billing.Acquire(testCtx(t), "invoice:42")
	require.NoError(t, err)
	p := f.permit(t, billing, "exports", "exports:daily")
	gone, err := billing.Acquire(testCtx(t), "invoice:43")
	require.NoError(t, err)
	seen, err := billing.Inspect(testCtx(t), "invoice:43")
	require.NoError(t, err)
	_, err = billing.ForceRelease(testCtx(t), "invoice:43", seen.Holder)
	require.NoError(t, err)
	require.Equal(t, lease.LossForceReleased, lostWith(t, gone, 5*time.Second))

	j, body := f.json(t)
	require.Len(t, j.Permits, 1, body)
	assert.Equal(t, "billing", j.Permits[0].Namespace)
	require.Len(t, j.Losses, 1, body)
	assert.Equal(t, "billing", j.Losses[0].Namespace)
	for _, got := range j.Leases {
		assert.Equal(t, "billing", got.Namespace, body)
		if got.Name == "exports" {
			require.NotNil(t, got.Permit, body)
			assert.Equal(t, p.Index, *got.Permit)
		} else {
			assert.Nil(t, got.Permit, "a key's own lease")
		}
	}

	html := f.html(t)
	leases, ok := parseTable(t, html, "leases")
	require.True(t, ok)
	permitCmd := "lockwatch inspect --key-hash " + keyHash("billing", "exports:daily") + " --permit " + strconv.Itoa(p.Index) +
		" --namespace billing"
	want := map[string]string{"invoices": "lockwatch inspect --key-hash " + keyHash("billing", "invoice:42") + " --namespace billing",
		"exports": permitCmd}
	names, cmds := leases.col(t, "lock name"), leases.col(t, "in Redis")
	require.Len(t, names, 2)
	for i, name := range names {
		assert.Equal(t, want[name], cmds[i], name)
	}
	losses, ok := parseTable(t, html, "losses")
	require.True(t, ok)
	assert.Equal(t, []string{"lockwatch inspect --key-hash " + keyHash("billing", "invoice:43") + " --namespace billing"}, losses.col(t, "in Redis now"))
	permitRows, ok := parseTable(t, html, "permits")
	require.True(t, ok)
	assert.Equal(t, []string{permitCmd}, permitRows.col(t, "in Redis"))
	require.NoError(t, l.Release(testCtx(t)))
}

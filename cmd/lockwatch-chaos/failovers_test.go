package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFailoverFigures(t *testing.T) {
	const ms = int64(time.Millisecond)
	fos := []failover{{Fault: 3, Kind: faultPrimaryKill, Broken: 1000 * ms, Promoted: 4000 * ms}}
	ops := []op{
		{Kind: kindAcquire, Outcome: outAcquired, Invoke: 899 * ms, Return: 900 * ms},   // before the break
		{Kind: kindAcquire, Outcome: outAcquired, Invoke: 999 * ms, Return: 1001 * ms},  // sent before it: the old primary's
		{Kind: kindAcquire, Outcome: outUnknown, Invoke: 1500 * ms, Return: 2000 * ms},  // during it
		{Kind: kindAcquire, Outcome: outAcquired, Invoke: 4100 * ms, Return: 4200 * ms}, // the first on the new primary
		{Kind: kindAcquire, Outcome: outAcquired, Invoke: 4400 * ms, Return: 4500 * ms},
	}
	leases := []leaseRec{
		{Acquired: 500 * ms, Done: 1800 * ms, Released: 1900 * ms, Lost: true, Reason: "renewal_unknown"},
		{Acquired: 600 * ms, Done: 1500 * ms, Released: 1200 * ms},                               // released before its cancel point
		{Acquired: 100 * ms, Done: 900 * ms, Released: 900 * ms, Lost: true, Reason: "deadline"}, // over before the break
	}
	figs := failoverFigures(fos, ops, leases)
	require.Len(t, figs, 1)
	f := figs[0]
	assert.Equal(t, "#3 primary-kill", f.Fault)
	assert.Equal(t, 3*time.Second, f.Promoted)
	assert.Equal(t, 3200*time.Millisecond, f.FirstAcquire)
	assert.Equal(t, 2, f.Held)
	assert.Equal(t, 1, f.Lost)
	assert.Equal(t, map[string]int{"renewal_unknown": 1}, f.Reasons)
	assert.Equal(t, "failover (#3 primary-kill): replica promoted 3s after the break, first acquire 3.2s after it; "+
		"1 of the 2 leases live at the break lost (renewal_unknown 1)", f.String())

	none := failoverFigures(fos, ops[:3], nil)
	assert.Contains(t, none[0].String(), "no acquire succeeded after it")

	// On a Cluster only the keys the failed master served count.
	other := []failover{{Fault: 4, Kind: faultMasterKill, Broken: 1000 * ms, Promoted: 1100 * ms, Keys: []string{"k2"}}}
	keyed := append([]op{{Key: "k2", Kind: kindAcquire, Outcome: outAcquired, Invoke: 4600 * ms, Return: 4700 * ms}}, ops...)
	f = failoverFigures(other, keyed, leases)[0]
	assert.Equal(t, 3700*time.Millisecond, f.FirstAcquire, "k1's acquires do not count for k2's master")
	assert.Zero(t, f.Held, "nor do k1's leases")
}

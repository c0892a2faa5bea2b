package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Why two holders of one key may both have had a live context.
const (
	overlapUnexplained = ""
	overlapRedisLoss   = "redis-loss"     // the key vanished in Redis: a restart without persistence, a failover (losesKeys)
	overlapStopped     = "holder-stopped" // the first holder's process was stopped (holder-stop, suspend)
)

// overlap is two leases of one key whose live intervals intersect: second
// was acquired while first's context was still live.
type overlap struct {
	first, second leaseRec
	why           string
}

func (o overlap) String() string {
	why := o.why
	if why == overlapUnexplained {
		why = "unexplained"
	}
	return fmt.Sprintf("%s acquired %s (fence %d) %v before %s's lease (fence %d) ended: %s",
		o.second.Holder, o.second.Key, o.second.Fence, time.Duration(o.first.liveUntil()-o.second.Acquired).Round(time.Microsecond),
		o.first.Holder, o.first.Fence, why)
}

// overlaps finds every pair of leases of one key whose live intervals
// intersect. A lease is live from the return of its Acquire to the first of
// its context's Done and its Release, both measured by its holder on the
// one monotonic clock every process records with: the second lease's
// interval starts at a moment its holder measured, the first's ends at a
// moment its holder measured, so the comparison needs no tolerance. (What
// is measured is when the holder could learn of the end, a little after
// the lease cancelled it: the work's view, which is the one that matters.)
//
// An overlap is explained, and the lease not at fault, when Redis lost the
// key (a fault that can lose keys, losesKeys, struck after first was acquired and
// before second was, and second came at most a TTL after it healed: the
// first lease learns of the loss only from its next renewal, due within
// TTL/3), or when first's holder process was stopped at some moment from
// window before second's acquire to that acquire (a stopped process cannot
// stop its work, and after its resume gets window to do so).
func overlaps(leases []leaseRec, faults []injected, ttl, window time.Duration,
	pausedDuring func(proc int, from, to int64) bool) []overlap {
	byKey := map[string][]leaseRec{}
	for _, r := range leases {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	var found []overlap
	for _, list := range byKey {
		slices.SortFunc(list, func(a, b leaseRec) int { return cmp.Compare(a.Acquired, b.Acquired) })
		for i, a := range list {
			for _, b := range list[i+1:] {
				if b.Acquired >= a.liveUntil() {
					break // sorted by start: no later lease begins inside a
				}
				found = append(found, overlap{first: a, second: b, why: explain(a, b, faults, ttl, window, pausedDuring)})
			}
		}
	}
	slices.SortFunc(found, func(x, y overlap) int { return cmp.Compare(x.second.Acquired, y.second.Acquired) })
	return found
}

func explain(a, b leaseRec, faults []injected, ttl, window time.Duration, pausedDuring func(proc int, from, to int64) bool) string {
	for _, f := range faults {
		if f.Kind.losesKeys() &&
			a.Acquired <= f.End && f.Start <= b.Acquired && b.Acquired <= f.End+int64(ttl) {
			return overlapRedisLoss
		}
	}
	if pausedDuring(a.Proc, max(a.Acquired, b.Acquired-int64(window)), b.Acquired) {
		return overlapStopped
	}
	return overlapUnexplained
}

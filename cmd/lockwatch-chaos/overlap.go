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
	overlapRedisLoss   = "redis-loss"     // the key vanished or split in Redis: a restart without persistence, a failover (explain)
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
	second, first := o.second.Holder+" acquired", "lease"
	switch {
	case o.second.Run:
		second = o.second.Holder + "'s program heartbeated on"
	case o.second.Term:
		second = o.second.Holder + " began leading"
	}
	switch {
	case o.first.Run:
		first = "program's work"
	case o.first.Term:
		first = "term"
	}
	return fmt.Sprintf("%s %s (fence %d) %v before %s's %s (fence %d) ended: %s",
		second, o.second.Key, o.second.Fence, time.Duration(o.first.liveUntil()-o.second.Acquired).Round(time.Microsecond),
		o.first.Holder, first, o.first.Fence, why)
}

// overlaps finds every pair of leases of one key whose live intervals
// intersect. A lease is live from the return of its Acquire to the first of
// its context's Done and its Release, both measured by its holder on the
// one monotonic clock every process records with: the second lease's
// interval starts at a moment its holder measured, the first's ends at a
// moment its holder measured, so the comparison needs no tolerance. (What
// is measured is when the holder could learn of the end, a little after
// the lease cancelled it: the work's view, which is the one that matters.)
// explain says why an overlap was allowed, if it was.
func overlaps(leases []leaseRec, faults []injected, fos []failover, ttl, window time.Duration,
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
				found = append(found, overlap{first: a, second: b, why: explain(a, b, faults, fos, ttl, window, pausedDuring)})
			}
		}
	}
	slices.SortFunc(found, func(x, y overlap) int { return cmp.Compare(x.second.Acquired, y.second.Acquired) })
	return found
}

// explain: an overlap is allowed, and the lease not at fault, when Redis
// lost or split the key, or when the first holder's process was stopped.
// Redis lost the key of a, which the failed primary served:
//
//   - in a failover that may lose writes (all but the coordinated
//     cluster-failover): a was acquired by the promotion, b after the
//     break and at most a TTL after the promotion (a learns of the loss
//     from its next renewal, due within TTL/3);
//   - while the old primary was back as a primary too, before its
//     demotion: a acquired by the demotion, b from the old primary's
//     return to a TTL after its demotion;
//   - in a restart without persistence (kill-restart): a acquired by the
//     restart's end, b from its start to a TTL after its end.
//
// The first holder's process was stopped (holder-stop, suspend) at some
// moment from window before b's acquire to that acquire: a stopped
// process cannot stop its work, and after its resume gets window to do so.
func explain(a, b leaseRec, faults []injected, fos []failover, ttl, window time.Duration,
	pausedDuring func(proc int, from, to int64) bool) string {
	within := func(from, to int64) bool { return from <= b.Acquired && b.Acquired <= to+int64(ttl) }
	for _, fo := range fos {
		if !fo.serves(a.Key) {
			continue
		}
		if fo.Kind != faultClusterFailover && a.Acquired <= fo.Promoted && within(fo.Broken, fo.Promoted) {
			return overlapRedisLoss
		}
		if fo.Back != 0 && a.Acquired <= fo.Demoted && within(fo.Back, fo.Demoted) {
			return overlapRedisLoss
		}
	}
	for _, f := range faults {
		if f.Kind == faultKill && a.Acquired <= f.End && within(f.Start, f.End) {
			return overlapRedisLoss
		}
	}
	if pausedDuring(a.Proc, max(a.Acquired, b.Acquired-int64(window)), b.Acquired) {
		return overlapStopped
	}
	// A shared lease's writer took its leases from Taken on, before its
	// Acquire returned: Redis may have lost one of those, and the other
	// holder taken it after the loss, whichever of the two returned first.
	never := func(int, int64, int64) bool { return false }
	if w, ok := takenEarly(a); ok && explain(w, b, faults, fos, ttl, window, never) == overlapRedisLoss {
		return overlapRedisLoss
	}
	if w, ok := takenEarly(b); ok && explain(w, a, faults, fos, ttl, window, never) == overlapRedisLoss {
		return overlapRedisLoss
	}
	return overlapUnexplained
}

// takenEarly is a shared lease's writer as from when it began to take
// its leases, if that was before its Acquire returned.
func takenEarly(w leaseRec) (leaseRec, bool) {
	if w.Taken == 0 || w.Taken >= w.Acquired {
		return w, false
	}
	w.Acquired, w.Taken = w.Taken, 0
	return w, true
}

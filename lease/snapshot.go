package lease

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
)

// Snapshot is what a Locker holds at one moment, for the people who run it:
// the live page (package debugpage) shows one. Keys appear as their hash,
// as on spans, and raw only when the Locker's Telemetry was made with
// telemetry.Config.RawKeys: a key is request input and may hold secrets.
type Snapshot struct {
	// Taken is when the snapshot was taken.
	Taken time.Time
	// Leases are the active leases of the Locker and of every Locker made
	// from it with With (they share one scheduler), by lock name, then key
	// hash.
	Leases []LeaseInfo
	// Losses are the last leases lost, newest first: at most 32 of them.
	Losses []LeaseInfo
}

// LeaseInfo is one lease in a Snapshot: an active one, or one lost.
type LeaseInfo struct {
	Name    string // the lock name (Config.Name)
	KeyHash string // the key's hash, as on spans and in Redis
	Key     string // the raw key, only with telemetry.Config.RawKeys
	// Namespace is the lease's Config.Namespace: with KeyHash, what
	// lockwatch inspect --key-hash --namespace names it by.
	Namespace string
	// Permit is the permit's index for a permit's lease (package
	// permits), whose names are its own (lockwatch inspect --permit),
	// and -1 for a key's own lease.
	Permit int
	Fence  int64
	// Holder is the hash of the lease's owner token, as Inspect shows the
	// key's holder: what lockwatch release --force --holder takes.
	Holder string
	// State is, for an active lease, "renewing" while a renewal is in
	// flight, "final" once nothing can extend it (its max hold,
	// Config.MaxHold, comes before a renewal could move its cancel point),
	// "expired" once its cancel point has passed and the scheduler is
	// about to end it, and "held" otherwise; "lost" for a lost one.
	State string
	// TTL is the lease's time to live in Redis (Config.TTL).
	TTL time.Duration
	// Age is the time since the acquire that took the lease was sent; for
	// a lost lease, how long it had been held when it was lost (its hold
	// time).
	Age time.Duration
	// Remaining is the validity left: the time until its cancel point,
	// unless a renewal is confirmed first (Lease.Remaining). 0 once lost.
	Remaining time.Duration
	// Renewals counts the lease's confirmed renewals.
	Renewals int
	// LastRenewal is the time from sending its last confirmed renewal to
	// applying the reply; 0 before the first.
	LastRenewal time.Duration
	// Reason and LostAt say why and when a lost lease was lost (its
	// context cancelled); empty and zero for an active one.
	Reason LossReason
	LostAt time.Time
}

// lastLosses is how many losses a Snapshot remembers.
const lastLosses = 32

// Snapshot returns the Locker's active leases and its last losses. It holds
// the scheduler's lock while it copies the leases, which delays renewals
// and cancellations by as long: it suits a page or a health check polled
// every few seconds, not a hot path.
func (lk *Locker) Snapshot() Snapshot {
	s := lk.sched
	s.mu.Lock()
	now := clock.Now()
	leases := make([]LeaseInfo, 0, len(s.dlQ.items))
	for _, l := range s.dlQ.items {
		info := l.info("held", now-l.sentAt)
		info.Remaining = max(0, time.Duration(l.cancelAt.Load())-now)
		switch {
		case info.Remaining == 0:
			info.State = "expired"
		case l.renewIdx < 0 && l.final():
			info.State = "final"
		case l.renewIdx < 0:
			info.State = "renewing"
		}
		leases = append(leases, info)
	}
	s.mu.Unlock()
	slices.SortFunc(leases, func(a, b LeaseInfo) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.KeyHash, b.KeyHash))
	})
	return Snapshot{Taken: clock.WallTime(now), Leases: leases, Losses: lk.losses.list()}
}

// lossLog keeps a Locker's last losses for Snapshot.
type lossLog struct {
	mu   sync.Mutex
	ring [lastLosses]LeaseInfo
	n    int // losses recorded so far
}

// add records l as it is lost; the scheduler calls it under its lock.
func (g *lossLog) add(l *Lease, reason LossReason) {
	info := l.info("lost", l.lostAt-l.sentAt)
	info.Reason, info.LostAt = reason, clock.WallTime(l.lostAt)
	g.mu.Lock()
	g.ring[g.n%lastLosses] = info
	g.n++
	g.mu.Unlock()
}

// list returns the losses, newest first.
func (g *lossLog) list() []LeaseInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]LeaseInfo, 0, min(g.n, lastLosses))
	for i := g.n - 1; i >= 0 && i >= g.n-lastLosses; i-- {
		out = append(out, g.ring[i%lastLosses])
	}
	return out
}

// info describes l in a Snapshot; the caller holds the scheduler's lock.
func (l *Lease) info(state string, age time.Duration) LeaseInfo {
	info := LeaseInfo{Name: l.set.Name, KeyHash: hashTag(l.lockKey), Namespace: l.set.Namespace, Permit: -1,
		Fence: l.token.Fence, Holder: holderOf(l.owner), State: state, TTL: l.set.TTL,
		Age: age, Renewals: l.renewals, LastRenewal: l.lastRenewal}
	if slot, ok := leasekeys.SlotOf(l.lockKey); ok {
		info.Permit = slot
	}
	if l.set.rec.RawKeys() {
		info.Key = l.key
	}
	return info
}

package lease

import (
	"slices"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/internal/clock"
)

// ghosts are the owner tokens of a Locker's own attempts whose end Redis
// may not have recorded: an unknown acquire whose clean-up got no reply in
// time (unresolved), a release whose reply was lost. Nobody works under
// them, yet one of them may hold its key for the rest of its TTL, or take
// it later by a late copy of its acquire. The Locker knows them, so it must
// never be refused by one: every acquire of the key sends them along
// (acquire.lua deletes a lock one of them holds and bars them all), and
// they are forgotten once an acquire's definite answer shows Redis has
// their bars.
//
// They are kept per lock key, at most ghostsPerKey of the newest, for
// ghostLife or two TTLs, whichever is longer: a Locker that does not
// acquire the key again within that time forgets them, and a late copy of
// one can then hold the key for one TTL, as one of another process's can
// (RELIABILITY.md). Forgotten keys are swept when the map has doubled since
// the last sweep or half a ghostLife has passed, so that a brownout, which
// puts many keys here while every acquire asks for its key's ghosts, costs
// each add O(1) on average, and a key stays at most 1.5 times its life.
type ghosts struct {
	mu        sync.Mutex
	byKey     map[string][]ghost
	sweepAt   int           // sweep when the map reaches this many keys
	lastSweep time.Duration // or once ghostLife/2 has passed since this
}

type ghost struct {
	owner string
	until time.Duration // clock.Now() after which it is forgotten
}

const (
	ghostsPerKey  = 8
	ghostLife     = 10 * time.Minute
	ghostMinSweep = 64
)

// add remembers owner as a ghost on lockKey, a key with this TTL.
func (g *ghosts) add(lockKey, owner string, ttl time.Duration) {
	t := clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byKey == nil {
		g.byKey = make(map[string][]ghost)
	}
	if len(g.byKey) >= g.sweepAt || t-g.lastSweep >= ghostLife/2 {
		for k, gs := range g.byKey {
			if gs[len(gs)-1].until <= t { // the newest is the last to go
				delete(g.byKey, k)
			}
		}
		g.sweepAt, g.lastSweep = max(ghostMinSweep, 2*len(g.byKey)), t
	}
	gs := g.byKey[lockKey]
	gs = append(gs, ghost{owner: owner, until: t + max(ghostLife, 2*ttl)})
	if len(gs) > ghostsPerKey {
		gs = gs[len(gs)-ghostsPerKey:]
	}
	g.byKey[lockKey] = gs
}

// of returns the owner tokens of lockKey's ghosts, oldest first (nil when
// there are none: the common case costs one lock and one map lookup).
func (g *ghosts) of(lockKey string) []string {
	t := clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	var owners []string
	for _, gh := range g.byKey[lockKey] {
		if gh.until > t {
			owners = append(owners, gh.owner)
		}
	}
	return owners
}

// barred forgets owners, ghosts of lockKey that an acquire's definite
// answer has barred in Redis.
func (g *ghosts) barred(lockKey string, owners []string) {
	if len(owners) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	gs := g.byKey[lockKey][:0]
	for _, gh := range g.byKey[lockKey] {
		if !slices.Contains(owners, gh.owner) {
			gs = append(gs, gh)
		}
	}
	if len(gs) == 0 {
		delete(g.byKey, lockKey)
		return
	}
	g.byKey[lockKey] = gs
}

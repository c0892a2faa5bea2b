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
// They are kept per lock key, at most ghostsPerKey of the newest, and for
// at most ghostLife: a Locker that never acquires the key again forgets
// them, and a late copy of one can then hold the key for one TTL, as one of
// another process's can (RELIABILITY.md).
type ghosts struct {
	mu    sync.Mutex
	byKey map[string][]ghost
}

type ghost struct {
	owner string
	until time.Duration // clock.Now() after which it is forgotten
}

const (
	ghostsPerKey = 8
	ghostLife    = 10 * time.Minute
)

// add remembers owner as a ghost on lockKey.
func (g *ghosts) add(lockKey, owner string) {
	t := clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byKey == nil {
		g.byKey = make(map[string][]ghost)
	}
	for k, gs := range g.byKey { // few keys: only failures put them here
		if gs[len(gs)-1].until <= t {
			delete(g.byKey, k)
		}
	}
	gs := append(g.byKey[lockKey], ghost{owner: owner, until: t + ghostLife})
	if len(gs) > ghostsPerKey {
		gs = gs[len(gs)-ghostsPerKey:]
	}
	g.byKey[lockKey] = gs
}

// of returns the owner tokens of lockKey's ghosts, oldest first (nil when
// there are none: the common case costs one lock).
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

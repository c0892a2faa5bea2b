package main

import (
	"fmt"
	"sync"
	"time"
)

// oftenEveryTTLs spaces the narrations of the faults that strike many
// times a second (lost replies, slow cancellations): one line per kind in
// that many TTLs, saying how many struck since the last line, keeps them
// from scrolling the others away.
const oftenEveryTTLs = 5.0

// throttle counts a frequent fault's strikes between its narrations.
type throttle struct {
	mu    sync.Mutex
	last  map[string]time.Time
	count map[string]int
}

// strike counts one strike of kind and reports whether to narrate it,
// with how many strikes went unnarrated before it.
func (t *throttle) strike(kind string, every time.Duration) (narrate bool, skipped int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last, t.count = map[string]time.Time{}, map[string]int{}
	}
	now := time.Now()
	if last, ok := t.last[kind]; ok && now.Sub(last) < every {
		t.count[kind]++
		return false, 0
	}
	skipped = t.count[kind]
	t.last[kind], t.count[kind] = now, 0
	return true, skipped
}

// often narrates a frequent fault's strike, at most once every
// oftenEveryTTLs per kind.
func (d *demo) often(kind, format string, args ...any) {
	ok, skipped := d.oftenLimit.strike(kind, d.ttls(oftenEveryTTLs))
	if !ok {
		return
	}
	what := fmt.Sprintf(format, args...)
	if skipped > 0 {
		what += fmt.Sprintf(" (and %d more since the last line like this)", skipped)
	}
	d.out.event(kind, "%s", what)
}

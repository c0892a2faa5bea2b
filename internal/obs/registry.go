package obs

import "sync"

// registry is a set of entries the process lists on its debug page while
// they live: each Add until its remove.
type registry[T any] struct {
	mu      sync.Mutex
	next    int
	entries map[int]T
}

// Add lists entry until remove.
func (r *registry[T]) Add(entry T) (remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = map[int]T{}
	}
	id := r.next
	r.next++
	r.entries[id] = entry
	return func() {
		r.mu.Lock()
		delete(r.entries, id)
		r.mu.Unlock()
	}
}

// all returns the entries listed, in no order.
func (r *registry[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	return out
}

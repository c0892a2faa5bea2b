package middleware

import "sync"

// keyLocks serializes work per key within one process: a guard holds a
// key's lock from the token check to the end of the handler, so that the
// requests it admits for one key reach the handler one at a time, in the
// order of their checks. Without it, a request admitted first (token 41)
// could still write after one admitted second (token 42), e.g. while its
// body is slow to arrive.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int // holders and waiters; the entry goes when it drops to 0
}

// lock locks key and returns its unlock function.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*keyLock)
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

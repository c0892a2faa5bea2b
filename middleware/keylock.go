package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// keyLocks serializes work per key within one process: a guard holds a
// key's lock from the token check to the end of the handler, so that the
// requests it admits for one key reach the handler one at a time, in the
// order of their checks. Without it, a request admitted first (token 41)
// could still write after one admitted second (token 42), e.g. while its
// body is slow to arrive.
//
// A wait for a key ends with the waiter's context: one stuck handler must
// not hold every later request for its key, the ones whose clients left
// included, for as long as it is stuck.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	held  chan struct{} // a one-slot semaphore: a send takes the lock
	users int           // holders and waiters; the entry goes when it drops to 0
}

// errKeyBusy: a request's wait for its key ended before the key was free.
var errKeyBusy = errors.New("middleware: an earlier request for this key is still being handled")

// lock locks key and returns its unlock function. It gives up, without the
// lock, when ctx ends (errKeyBusy wrapping ctx's error) or, if wait > 0,
// after waiting that long (errKeyBusy). A context that has ended is never
// given the lock, even if the key is free. Only a wait that blocks starts a
// timer.
func (k *keyLocks) lock(ctx context.Context, key string, wait time.Duration) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", errKeyBusy, err)
	}
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*keyLock)
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{held: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	unlock = func() {
		<-l.held
		k.leave(key, l)
	}
	select {
	case l.held <- struct{}{}:
		return unlock, nil
	default:
	}
	var elapsed <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		elapsed = t.C
	}
	select {
	case l.held <- struct{}{}:
	case <-ctx.Done():
		k.leave(key, l)
		return nil, fmt.Errorf("%w: %w", errKeyBusy, ctx.Err())
	case <-elapsed:
		k.leave(key, l)
		return nil, errKeyBusy
	}
	if err := ctx.Err(); err != nil { // it ended as the key came free, and select chose the key
		unlock()
		return nil, fmt.Errorf("%w: %w", errKeyBusy, err)
	}
	return unlock, nil
}

// leave drops a holder or waiter of l, and l with its last one.
func (k *keyLocks) leave(key string, l *keyLock) {
	k.mu.Lock()
	if l.users--; l.users == 0 {
		delete(k.locks, key)
	}
	k.mu.Unlock()
}

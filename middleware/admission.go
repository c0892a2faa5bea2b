package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrNotAdmitted is Guarded's refusal of a write made outside its request's
// admission: after the guarded handler returned, or on a context no Guard
// admitted.
var ErrNotAdmitted = errors.New("middleware: write outside its request's admission")

// errEnded is the refusal of a write that came after the handler returned,
// and the cause of the admitted context's end.
var errEnded = fmt.Errorf("%w: the guarded handler has returned", ErrNotAdmitted)

// admission is a Guard's pass for one request: it begins when the guard
// hands the request to its handler and ends when the handler has returned
// and the Guarded writes in flight at that moment have returned too. For a
// request with a token, the key's lock is held all that time.
//
// The guard serializes what runs inside the admission and nothing else: a
// handler that returns before its work is done (http.TimeoutHandler inside
// the guard, a write handed to a goroutine) would let that work write after
// a request admitted later with a newer token, and the resource would hold
// an older token's value under a newer mark. The guard cannot see such a
// write, so it cannot wait for it; it can refuse one that asks (Guarded),
// and count it.
type admission struct {
	guard  *Guard
	cancel context.CancelCauseFunc
	unlock func() // the key's lock; a no-op for a request passed unchecked

	mu     sync.Mutex
	ended  bool
	writes sync.WaitGroup // Guarded calls in flight
}

type admissionKey struct{}

// enter registers a write, unless the admission has ended.
func (a *admission) enter() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return false
	}
	a.writes.Add(1)
	return true
}

// end closes the admission to new writes, waits for those in flight, and
// then ends the context and frees the key: a write under way when the
// handler returns still comes before the next request's.
func (a *admission) end() {
	a.mu.Lock()
	a.ended = true
	a.mu.Unlock()
	a.writes.Wait()
	a.cancel(errEnded)
	a.unlock()
}

// Guarded runs fn, a write to the resource behind a Guard, inside the
// admission of the request whose context (or a context derived from it) ctx
// is, and returns fn's error. While fn runs the admission cannot end: a
// Guarded write still running when the handler returns holds the key until
// it returns, so a request admitted later with a newer token writes after
// it. Once the handler has returned, Guarded refuses (errors.Is
// ErrNotAdmitted, fn not run), records the refusal as a fence check with
// result "late" (GuardConfig.Telemetry) and logs it at Warn: a late write
// the guard cannot order any more. On a context no Guard admitted it refuses
// too, uncounted.
//
// Use it where a write may outlive its handler: a goroutine the handler
// starts, or a handler under an http.TimeoutHandler placed inside the
// guard. A write that always returns before its handler needs no Guarded;
// nor does a write to a fenced store (fence.RedisStore.Write, a
// fence.Table), which checks the token in the step that writes.
func Guarded(ctx context.Context, fn func() error) error {
	a, _ := ctx.Value(admissionKey{}).(*admission)
	if a == nil {
		return fmt.Errorf("%w: no Guard admitted this request", ErrNotAdmitted)
	}
	if !a.enter() {
		a.guard.tel.LateWrite(ctx, a.guard.cfg.resource)
		return errEnded
	}
	defer a.writes.Done()
	return fn()
}

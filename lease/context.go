package lease

import (
	"context"
	"errors"

	"github.com/lockwatch/lockwatch/fence"
)

type ctxKey struct{}

// FromContext returns the lease whose context ctx is (or derives from), or
// nil. Handlers wrapped by the middleware reach their lease this way, for
// its fence, Remaining and Commit. The nil Lease of a context without one (a
// route or method not behind the middleware) is safe to use: Commit and
// Release refuse with an error that says so, without running fn; Err says
// the same; Context is cancelled with it as the cause; Remaining, Fence,
// Token and Key are zero.
func FromContext(ctx context.Context) *Lease {
	l, _ := ctx.Value(ctxKey{}).(*Lease)
	return l
}

// leaseContext derives the lease's context from the caller's: it carries the
// lease (FromContext) and its token (fence.FromContext, which the client-side
// propagators put on outgoing calls), and is cancelled with a cause.
func leaseContext(parent context.Context, l *Lease) (context.Context, context.CancelCauseFunc) {
	ctx := context.WithValue(fence.NewContext(parent, l.token), ctxKey{}, l)
	return context.WithCancelCause(ctx)
}

// errNoLease is what a nil Lease's methods refuse with: the mistake is the
// caller's wiring, so the message names it rather than offering a sentinel
// to match.
var errNoLease = errors.New("lease: no lease: the context carries none (is the route or method behind the middleware?)")

// noLeaseCtx is a nil Lease's context: ended, errNoLease its cause, so
// work started on it stops at once.
var noLeaseCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errNoLease)
	return ctx
}()

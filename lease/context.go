package lease

import (
	"context"

	"github.com/lockwatch/lockwatch/fence"
)

type ctxKey struct{}

// FromContext returns the lease whose context ctx is (or derives from), or
// nil. Handlers wrapped by the middleware reach their lease this way, for its
// fence, Remaining and Commit.
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

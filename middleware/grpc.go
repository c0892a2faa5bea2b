package middleware

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/lease"
)

// UnaryServerInterceptor runs each unary call holding the lease on
// key(ctx, fullMethod, req); a key of "" runs the call without a lock. The
// handler's context is the lease's context (lease.FromContext gives the
// lease). A call that cannot take the lease is refused ABORTED
// LEASE_CONTENDED (with RetryInfo: the holder's TTL), or UNAVAILABLE
// LEASE_UNKNOWN or LEASE_UNAVAILABLE.
//
// A call whose lease was lost and whose handler returned an error is
// answered UNAVAILABLE LEASE_LOST rather than ABORTED: the work may not have
// happened, and retrying the whole call (which takes a new lease) is the
// right reaction, as for a server that went away. Only a handler error that
// is the loss showing through (its context ending, or an unclassified error)
// is replaced; a status of the handler's own (say NOT_FOUND) is returned as
// it is. A handler that returns success after the loss keeps its answer (see
// the package doc). A handler that returns Commit's error, or its write's
// stale rejection, as it is gets the table's status for it (FENCE_STALE,
// LEASE_LOST, LEASE_EXPIRING), also after a loss: a stale rejection says
// that the write did not happen. WriteError is the same on HTTP.
func UnaryServerInterceptor(locker *lease.Locker, key func(ctx context.Context, fullMethod string, req any) string, c Config) grpc.UnaryServerInterceptor {
	if key == nil {
		panic("middleware: nil key function")
	}
	h := newHolder(locker, newHolderConfig(c))
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var resp any
		err := h.call(ctx, info.FullMethod, key(ctx, info.FullMethod, req), func(ctx context.Context) error {
			var err error
			resp, err = handler(ctx, req)
			return err
		})
		return resp, err
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams, with the
// key taken from the call's method and metadata (its messages are not read
// yet). The stream's Context() is the lease's context for the whole stream,
// and once the lease is lost its RecvMsg and SendMsg return UNAVAILABLE
// LEASE_LOST, also a call that was blocked on the transport when the loss
// came; a handler that returns that error answers the client with it. This
// costs a few microseconds per message (each call runs on a goroutine of its
// own: grpc-go cannot end a stream otherwise): a stream of messages that
// cheap which needs the rate holds its lease per batch instead.
func StreamServerInterceptor(locker *lease.Locker, key func(ctx context.Context, fullMethod string) string, c Config) grpc.StreamServerInterceptor {
	if key == nil {
		panic("middleware: nil key function")
	}
	h := newHolder(locker, newHolderConfig(c))
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		return h.call(ctx, info.FullMethod, key(ctx, info.FullMethod), func(lctx context.Context) error {
			if lctx == ctx { // no key: no lease to watch
				return handler(srv, ss)
			}
			return handler(srv, &leaseStream{ServerStream: ss, ctx: lctx, name: h.cfg.grpcName(info.FullMethod)})
		})
	}
}

// call is the core both interceptors share.
func (h *holder) call(ctx context.Context, method, key string, run func(context.Context) error) (err error) {
	if key == "" {
		return run(ctx)
	}
	name := h.cfg.grpcName(method)
	l, err := h.acquire(ctx, key, name)
	if err != nil {
		return acquireRefusal(err).grpcStatus(name, err)
	}
	returned := false
	defer func() {
		lost := h.end(l.Context(), l, name, returned && err == nil)
		if lost != nil && returned && cancelled(err) {
			err = refuseLost.grpcStatus(name, nil)
		}
	}()
	err = handlerStatus(name, run(l.Context()))
	returned = true
	return err
}

// cancelled reports whether a handler's error, after a loss, is the loss
// showing through: its context ending, or an unclassified error (a plain Go
// error, code UNKNOWN, as a driver returns when its context is cancelled).
// An answer of the handler's own (NOT_FOUND, INVALID_ARGUMENT, ...) is kept.
func cancelled(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lease.ErrLost) {
		return true
	}
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unknown:
		return true
	}
	return false
}

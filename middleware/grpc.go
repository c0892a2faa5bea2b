package middleware

import (
	"context"
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// UnaryKeyFunc returns the lock key of a unary call; "" runs it without a
// lock.
type UnaryKeyFunc func(ctx context.Context, fullMethod string, req any) string

// StreamKeyFunc returns the lock key of a streaming call (from its method
// and metadata: the stream's messages are not read yet); "" runs it without
// a lock.
type StreamKeyFunc func(ctx context.Context, fullMethod string) string

// UnaryServerInterceptor runs each unary call holding the lease on key. The
// handler's context is the lease's context (lease.FromContext gives the
// lease). Refusals carry google.rpc.ErrorInfo{reason, domain "lockwatch"}
// and, when retrying makes sense, RetryInfo:
//
//	contended                      ABORTED      LEASE_CONTENDED, retry after the holder's TTL
//	unknown, Redis unavailable     UNAVAILABLE  LEASE_UNKNOWN / LEASE_UNAVAILABLE
//	lost, handler returned error   UNAVAILABLE  LEASE_LOST
//
// A lost lease is UNAVAILABLE rather than ABORTED: the work may not have
// happened, and retrying the whole call (which takes a new lease) is the
// right reaction, as for a server that went away. Only a handler error that
// is the loss showing through (its context ending, or an unclassified
// error) is replaced; a status of the handler's own (say NOT_FOUND) is
// returned as it is. A handler that returns
// success after its lease was lost keeps its answer (it did the work; the
// resource's fence decided whether its write counted) and is counted as a
// late completion.
func UnaryServerInterceptor(locker *lease.Locker, key UnaryKeyFunc, opts ...Option) grpc.UnaryServerInterceptor {
	if key == nil {
		panic("middleware: nil UnaryKeyFunc")
	}
	h := newHolder(locker, opts)
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

// StreamServerInterceptor is UnaryServerInterceptor for streams: the
// stream's Context() is the lease's context for the whole stream, and once
// the lease is lost its RecvMsg and SendMsg return UNAVAILABLE LEASE_LOST,
// also a call that was blocked on the transport when the loss came (see
// leaseStream for what that costs and guarantees). A handler that returns
// that error answers the client with it.
func StreamServerInterceptor(locker *lease.Locker, key StreamKeyFunc, opts ...Option) grpc.StreamServerInterceptor {
	if key == nil {
		panic("middleware: nil StreamKeyFunc")
	}
	h := newHolder(locker, opts)
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
		return acquireStatus(err, name)
	}
	returned := false
	defer func() {
		lost := h.end(l.Context(), l, name, returned && err == nil)
		if lost != nil && returned && cancelled(err) {
			err = lostStatus(name)
		}
	}()
	err = run(l.Context())
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

// lostStatus is the answer when the lease was lost while the call ran.
func lostStatus(lock string) error {
	return statusWith(codes.Unavailable, ReasonLost, lock, "lease lost while the call ran", time.Second)
}

func acquireStatus(err error, lock string) error {
	var busy *lease.NotAcquiredError
	switch {
	case errors.As(err, &busy):
		return statusWith(codes.Aborted, ReasonContended, lock, "lease held by another replica", max(busy.HolderTTL, time.Second))
	case errors.Is(err, lease.ErrUnknown):
		return statusWith(codes.Unavailable, ReasonUnknown, lock, "lease state unknown; the call did not run", time.Second)
	}
	return statusWith(codes.Unavailable, ReasonUnavailable, lock, "lease unavailable; the call did not run", time.Second)
}

func fenceStatus(err error) error {
	switch {
	case errors.Is(err, fence.ErrStale):
		return statusWith(codes.Aborted, ReasonFenceStale, "", err.Error(), 0)
	case errors.Is(err, fence.ErrMalformed):
		return statusWith(codes.InvalidArgument, ReasonFenceMalformed, "", err.Error(), 0)
	case errors.Is(err, fence.ErrMissing):
		return statusWith(codes.FailedPrecondition, ReasonFenceMissing, "", "send the lease's token in the "+fence.MetadataKey+" metadata", 0)
	case errors.Is(err, errKeyBusy) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return status.FromContextError(err).Err() // the caller left or ran out of time: its own status
	case errors.Is(err, errKeyBusy):
		return statusWith(codes.Unavailable, ReasonFenceBusy, "", "an earlier call for this key is still being handled; this one was not admitted", time.Second)
	}
	return statusWith(codes.Unavailable, ReasonFenceStore, "", "fence store unavailable", time.Second)
}

// statusWith builds a status with ErrorInfo and, when retry > 0, RetryInfo.
func statusWith(code codes.Code, reason, lock, msg string, retry time.Duration) error {
	info := &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}
	if lock != "" {
		info.Metadata = map[string]string{"lock_name": lock}
	}
	st := status.New(code, msg)
	var err error
	if retry > 0 {
		st, err = st.WithDetails(info, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	} else {
		st, err = st.WithDetails(info)
	}
	if err != nil { // only for unmarshalable details: never for these two
		return status.Error(code, msg)
	}
	return st.Err()
}

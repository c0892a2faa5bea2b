package middleware

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
)

// Guards sit in front of a resource: each request's fencing token is
// admitted by a fenced store (fence.Admitter: one atomic check-and-advance of
// the high-water mark of the request's key) before the handler runs, and the
// guard holds a per-key lock from that check until the handler returns, so
// the requests it admits for one key are handled one at a time, in the order
// of their checks. That makes the guard a fence for a resource served by one
// process (or one process per key). A resource served by several replicas
// at once must fence at the write itself (fence.RedisStore.Write,
// fence.SQLTable): there the guard only rejects stale requests early.
// Answers:
//
//	stale token       409 FENCE_STALE         ABORTED
//	malformed token   400 FENCE_MALFORMED     INVALID_ARGUMENT
//	missing token     428 FENCE_MISSING       FAILED_PRECONDITION (AllowMissingFence passes it)
//	store error       503 FENCE_UNAVAILABLE   UNAVAILABLE
//
// The store records every check (lockwatch_fence_checks_total) and every
// rejection (lockwatch_fence_rejections_total, with an exemplar of the
// request's span). An admitted request's context carries its token
// (fence.FromContext). key returns the high-water key (usually the lock key
// the writer held); "" passes the request unchecked.

// HTTPGuard checks the Fencing-Token header.
func HTTPGuard(store fence.Admitter, key KeyFunc, opts ...Option) func(http.Handler) http.Handler {
	if store == nil || key == nil {
		panic("middleware: HTTPGuard needs a store and a KeyFunc")
	}
	cfg := newConfig(opts)
	return func(next http.Handler) http.Handler {
		var locks keyLocks
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, unlock, err := admit(r.Context(), store, &locks, key(r), r.Header.Values(fence.Header), cfg)
			if err != nil {
				cfg.errorWriter(w, r, fenceProblem(err))
				return
			}
			defer unlock()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// UnaryServerGuard checks the fencing-token metadata of unary calls.
func UnaryServerGuard(store fence.Admitter, key UnaryKeyFunc, opts ...Option) grpc.UnaryServerInterceptor {
	if store == nil || key == nil {
		panic("middleware: UnaryServerGuard needs a store and a key function")
	}
	cfg := newConfig(opts)
	var locks keyLocks
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, unlock, err := admit(ctx, store, &locks, key(ctx, info.FullMethod, req), incoming(ctx), cfg)
		if err != nil {
			return nil, fenceStatus(err)
		}
		defer unlock()
		return handler(ctx, req)
	}
}

// StreamServerGuard checks the fencing-token metadata of streams when the
// stream opens, and holds the key's lock for the whole stream: a stream
// admitted with an old token finishes before a newer one starts.
func StreamServerGuard(store fence.Admitter, key StreamKeyFunc, opts ...Option) grpc.StreamServerInterceptor {
	if store == nil || key == nil {
		panic("middleware: StreamServerGuard needs a store and a key function")
	}
	cfg := newConfig(opts)
	var locks keyLocks
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, unlock, err := admit(ss.Context(), store, &locks, key(ss.Context(), info.FullMethod), incoming(ss.Context()), cfg)
		if err != nil {
			return fenceStatus(err)
		}
		defer unlock()
		return handler(srv, &leaseStream{ServerStream: ss, ctx: ctx})
	}
}

func incoming(ctx context.Context) []string {
	md, _ := metadata.FromIncomingContext(ctx)
	return md.Get(fence.MetadataKey)
}

// admit parses the token values, locks key and has the store admit the
// token for it. On success the caller runs the handler, then unlock.
func admit(ctx context.Context, store fence.Admitter, locks *keyLocks, key string, values []string, cfg config) (context.Context, func(), error) {
	noop := func() {}
	if key == "" {
		return ctx, noop, nil
	}
	tok, err := fence.ParseValues(values)
	switch {
	case errors.Is(err, fence.ErrMissing) && cfg.allowNoFence:
		return ctx, noop, nil
	case err != nil:
		return ctx, nil, err
	}
	unlock := locks.lock(key)
	if err := store.Admit(ctx, key, tok); err != nil {
		unlock()
		return ctx, nil, err
	}
	return fence.NewContext(ctx, tok), unlock, nil
}

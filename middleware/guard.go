package middleware

import (
	"context"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
)

// Guards sit in front of a service that serializes writes behind them: each
// request's fencing token is admitted by a fenced store (fence.Admitter:
// one atomic check-and-advance of the high-water mark of the request's key)
// before the handler runs. Answers:
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
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, err := admit(r.Context(), store, key(r), r.Header.Values(fence.Header), cfg)
			if err != nil {
				cfg.errorWriter(w, r, fenceProblem(err))
				return
			}
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
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := admit(ctx, store, key(ctx, info.FullMethod, req), incoming(ctx), cfg)
		if err != nil {
			return nil, fenceStatus(err)
		}
		return handler(ctx, req)
	}
}

// StreamServerGuard checks the fencing-token metadata of streams, once when
// the stream opens.
func StreamServerGuard(store fence.Admitter, key StreamKeyFunc, opts ...Option) grpc.StreamServerInterceptor {
	if store == nil || key == nil {
		panic("middleware: StreamServerGuard needs a store and a key function")
	}
	cfg := newConfig(opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := admit(ss.Context(), store, key(ss.Context(), info.FullMethod), incoming(ss.Context()), cfg)
		if err != nil {
			return fenceStatus(err)
		}
		return handler(srv, &leaseStream{ServerStream: ss, ctx: ctx})
	}
}

func incoming(ctx context.Context) []string {
	md, _ := metadata.FromIncomingContext(ctx)
	return md.Get(fence.MetadataKey)
}

// admit parses the token values and has the store admit the token for key.
func admit(ctx context.Context, store fence.Admitter, key string, values []string, cfg config) (context.Context, error) {
	if key == "" {
		return ctx, nil
	}
	tok, err := fence.ParseValues(values)
	switch {
	case err == fence.ErrMissing && cfg.allowNoFence:
		return ctx, nil
	case err != nil:
		return ctx, err
	}
	if err := store.Admit(ctx, key, tok); err != nil {
		return ctx, err
	}
	return fence.NewContext(ctx, tok), nil
}

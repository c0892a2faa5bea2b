package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// Guard sits in front of a resource: each request's fencing token is
// admitted by a fenced store (fence.Admitter: one atomic check-and-advance of
// the high-water mark of the request's key) before the handler runs, and the
// guard holds a per-key lock from that check until the handler returns, so
// the requests it admits for one key are handled one at a time, in the order
// of their checks. Without that lock a request admitted with token 41 whose
// body is slow to arrive could write after one admitted with 42: the mark
// would say 42 and the resource hold 41's value. A request waiting for its
// key's lock gives up when its context ends or, with WithGuardWait, after
// that bound (default: no bound but the context), and is then never
// admitted: it does not advance the mark.
//
// One Guard is one serialization: its HTTP middleware, unary and stream
// interceptors share one lock table, however many routes and methods they
// wrap. Give every entry point that writes one resource the same Guard (and
// key functions that name a resource the same way on each), or they do not
// exclude each other. What the lock does not serialize:
//
//   - two Guard values over one store: each has its own table, so a request
//     behind one can write while a request behind the other, admitted
//     later, writes too;
//   - several processes (replicas) serving one resource: the lock is in
//     memory;
//   - work that outlives its handler: the hold ends when the wrapped
//     handler returns. An http.TimeoutHandler inside the guard returns at
//     its timeout (503) while the handler runs on, so the handler's write
//     can land after a newer token's.
//
// Such resources must fence at the write itself (fence.RedisStore.Write,
// a fence.Table), where the check and the write are one atomic step; a
// guard in front of them only rejects stale requests early. Within one
// Guard, put http.TimeoutHandler outside it (http.TimeoutHandler(g.HTTP(key)(h),
// d, msg)), where the guard holds the key until h returns, and make a
// write that may outlive its handler (a goroutine's) through Guarded.
//
// A request is refused with a reason of the package doc's table:
// FENCE_STALE, FENCE_MALFORMED, FENCE_MISSING (WithMissingFenceAllowed
// passes it), the store's refusals of a token it cannot trust
// (FENCE_FOREIGN, FENCE_FORGED, FENCE_AHEAD, FENCE_UNSCOPED: see
// fence.Token), FENCE_STORE_UNAVAILABLE, or FENCE_BUSY when its wait for the
// key was given up (a gRPC call whose own context ended gets that
// context's status instead: CANCELED or DEADLINE_EXCEEDED).
//
// The store records every check (lockwatch_fence_checks_total) and every
// rejection (lockwatch_fence_rejections_total, with an exemplar of the
// request's span). An admitted request's context carries its token
// (fence.FromContext) and ends when its handler returns, with
// ErrNotAdmitted as its cause. The key functions return the lock key the
// writer held (within the store's lock namespace, fence.WithLockNamespace):
// a token is admitted only for the key it was minted for. "" passes the
// request unchecked and unserialized. A malformed token is counted
// (lockwatch_fence_checks_total{result="malformed"}) like the store's
// refusals.
type Guard struct {
	store fence.Admitter
	cfg   guardConfig
	tel   *obs.Recorder
	locks keyLocks
}

// NewGuard returns a Guard admitting tokens through store. It panics on a
// nil store or an invalid option (a negative WithGuardWait), like
// lease.NewLocker: both are programming errors that should stop a service
// at start-up, not change how its requests wait.
func NewGuard(store fence.Admitter, opts ...GuardOption) *Guard {
	if store == nil {
		panic("middleware: nil store")
	}
	cfg := newGuardConfig(opts)
	if cfg.guardWait < 0 {
		panic(fmt.Sprintf("middleware: NewGuard: negative WithGuardWait: %v", cfg.guardWait))
	}
	tel := (*obs.Telemetry)(cfg.tel).Recorder()
	if tel == nil {
		tel = obs.New(obs.Config{})
	}
	return &Guard{store: store, cfg: cfg, tel: tel}
}

// HTTP returns middleware that checks the Fencing-Token header. Wrap every
// route that writes the resource with it.
func (g *Guard) HTTP(key func(*http.Request) string) func(http.Handler) http.Handler {
	if key == nil {
		panic("middleware: nil key function")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, end, err := g.admit(r.Context(), key(r), r.Header.Values(tokenHeader))
			if err != nil {
				g.cfg.errorWriter(w, r, fenceRefusal(err).problem("", err))
				return
			}
			defer end()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// UnaryServerInterceptor checks the fencing-token metadata of unary calls.
func (g *Guard) UnaryServerInterceptor(key func(ctx context.Context, fullMethod string, req any) string) grpc.UnaryServerInterceptor {
	if key == nil {
		panic("middleware: nil key function")
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, end, err := g.admit(ctx, key(ctx, info.FullMethod, req), incoming(ctx))
		if err != nil {
			return nil, fenceStatus(err)
		}
		defer end()
		return handler(ctx, req)
	}
}

// StreamServerInterceptor checks the fencing-token metadata of streams when
// the stream opens, and holds the key's lock for the whole stream: a stream
// admitted with an old token finishes before a newer one starts.
func (g *Guard) StreamServerInterceptor(key func(ctx context.Context, fullMethod string) string) grpc.StreamServerInterceptor {
	if key == nil {
		panic("middleware: nil key function")
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, end, err := g.admit(ss.Context(), key(ss.Context(), info.FullMethod), incoming(ss.Context()))
		if err != nil {
			return fenceStatus(err)
		}
		defer end()
		return handler(srv, &contextStream{ServerStream: ss, ctx: ctx})
	}
}

func incoming(ctx context.Context) []string {
	md, _ := metadata.FromIncomingContext(ctx)
	return md.Get(tokenMetadata)
}

// admit parses the token values, locks key and has the store admit the
// token for it. On success the caller runs the handler on the returned
// context, then end.
func (g *Guard) admit(ctx context.Context, key string, values []string) (_ context.Context, end func(), _ error) {
	noop := func() {}
	if key == "" {
		return g.pass(ctx, noop)
	}
	tok, err := parseValues(values)
	switch {
	case errors.Is(err, errMissing) && g.cfg.allowNoFence:
		return g.pass(ctx, noop)
	case errors.Is(err, fence.ErrMalformed):
		g.tel.RefuseFenceCheck(ctx, nil, obs.FenceRefusal{Resource: g.cfg.resource, Result: obs.FenceMalformed, Err: err})
		return ctx, nil, err
	case err != nil:
		return ctx, nil, err
	}
	unlock, err := g.locks.lock(ctx, key, g.cfg.guardWait)
	if err != nil {
		return ctx, nil, err
	}
	if err := g.store.Admit(ctx, key, tok); err != nil {
		unlock()
		return ctx, nil, err
	}
	return g.pass(fence.NewContext(ctx, tok), unlock)
}

// pass begins the admission of a request the guard lets through, checked
// or not: Guarded writes on its context run until end.
func (g *Guard) pass(ctx context.Context, unlock func()) (context.Context, func(), error) {
	ctx, cancel := context.WithCancelCause(ctx)
	a := &admission{guard: g, cancel: cancel, unlock: unlock}
	return context.WithValue(ctx, admissionKey{}, a), a.end, nil
}

// contextStream is a ServerStream whose Context is ctx.
type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *contextStream) Context() context.Context { return s.ctx }

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
// admitted by a fenced store (fence.Admitter: one atomic check-and-advance
// of the mark of the request's key) before the handler runs, and the guard
// holds a per-key lock from that check until the handler returns, so the
// requests it admits for one key run one at a time, in the order of their
// checks: else a request admitted with token 41 whose body is slow could
// write after one admitted with 42. Its HTTP middleware and interceptors
// share one lock table; what it does not serialize (two Guards, several
// processes, work that outlives its handler) is in the package doc.
//
// The key functions return the lock key the writer held, in the store's lock
// namespace; "" passes the request unchecked and unserialized. A request is
// refused with a reason of the package doc's table: FENCE_STALE,
// FENCE_MALFORMED, FENCE_MISSING (unless AllowMissingFence), FENCE_FOREIGN,
// FENCE_FORGED, FENCE_AHEAD, FENCE_UNSCOPED, FENCE_STORE_UNAVAILABLE, or
// FENCE_BUSY when it gave up waiting for the key (its context ended, or
// GuardConfig.Wait passed). Every check is counted in
// lockwatch_fence_checks_total, a malformed token too. An admitted request's
// context carries its token (fence.FromContext) and ends when its handler
// returns, ErrNotAdmitted its cause.
type Guard struct {
	store fence.Admitter
	cfg   guardConfig
	tel   *obs.Recorder
	locks keyLocks
}

// NewGuard returns a Guard admitting tokens through store. It panics on a
// nil store or an invalid c (a negative Wait), like lease.NewLocker: both
// are programming errors that should stop a service at start-up, not
// change how its requests wait.
func NewGuard(store fence.Admitter, c GuardConfig) *Guard {
	if store == nil {
		panic("middleware: nil store")
	}
	cfg := newGuardConfig(c)
	if cfg.guardWait < 0 {
		panic(fmt.Sprintf("middleware: NewGuard: negative Wait: %v", cfg.guardWait))
	}
	tel := obs.RecorderOf(cfg.tel)
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

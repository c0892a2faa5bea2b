package middleware

import (
	"context"
	"net/http"
)

// WriteError answers a handler's error as the middleware answers its own
// refusals: an error the package doc's table has a reason for becomes that
// problem (FENCE_STALE for a write the resource refused as stale,
// LEASE_LOST for a lease lost before the write, LEASE_EXPIRING for a
// Commit refused for want of validity). On a route of HTTP it goes through
// that route's Config.ErrorWriter and names its lock, like the route's own
// refusals. Any other error is a 500 problem without a reason, which shows
// the client nothing of err (p.Err has it, for a custom writer's log).
//
//	if err := l.Commit(r.Context(), write); err != nil {
//		middleware.WriteError(w, r, err)
//		return
//	}
//
// gRPC handlers return the error instead: the interceptors answer the same
// errors with the table's status.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	rt, _ := r.Context().Value(routeKey{}).(route)
	if rt.errorWriter == nil {
		rt.errorWriter = writeProblem
	}
	ref, ok := handlerRefusal(err)
	if !ok {
		rt.errorWriter(w, r, &Problem{Type: "about:blank", Title: http.StatusText(http.StatusInternalServerError),
			Status: http.StatusInternalServerError, LockName: rt.name, Err: err})
		return
	}
	rt.errorWriter(w, r, ref.problem(rt.name, err))
}

// route is what HTTP tells WriteError through the handler's context: the
// request's lock name and the route's error writer.
type route struct {
	name        string
	errorWriter func(http.ResponseWriter, *http.Request, *Problem)
}

type routeKey struct{}

func withRoute(ctx context.Context, rt route) context.Context {
	return context.WithValue(ctx, routeKey{}, rt)
}

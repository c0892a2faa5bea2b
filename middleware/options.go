package middleware

import (
	"net/http"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// Config configures the holder middleware, HTTP and gRPC alike: HTTP,
// UnaryServerInterceptor and StreamServerInterceptor. The zero value gives
// the defaults.
type Config struct {
	// Name is the lock name of every request the middleware holds a lease
	// for: the lock.name attribute of its metrics, spans and logs, and the
	// lock_name of its refusals. It must come from a small set (a route, an
	// operation), never from the key. Default (""): the ServeMux pattern
	// that matched the HTTP request (r.Pattern, or "unrouted" under a router
	// that sets none: give each route's middleware its name), the full
	// method name of a gRPC call.
	Name string
	// Lease's fields that are not zero replace the Locker's for every
	// request (lease.Locker.With): Wait for a bounded wait, TTL for a
	// per-route TTL, and so on. The lock name is the middleware's (Name,
	// else the route or method), whatever Lease.Name says. An invalid field
	// makes HTTP and the interceptors panic, as lease.NewLocker does.
	Lease lease.Config
	// Permits, above 0, makes each request take one of Permits permits of
	// its key's semaphore (package permits) instead of the key's exclusive
	// lease: at most Permits requests per key run at once across every
	// replica giving the key this limit, and the next is refused
	// PERMITS_SATURATED. The handler's context is the permit's lease's
	// (lease.FromContext gives it; its token is scoped to the permit's key,
	// permits.Key). Lease.Wait bounds the wait for a permit (the Locker's
	// own Wait does not apply); the permits' signals and their leases' go
	// where the lease's do (Lease.Telemetry, else the Locker's). A value
	// outside 0 to permits.MaxLimit makes HTTP and the interceptors panic.
	// Default 0: the exclusive lease.
	Permits int
	// SyncRelease makes the middleware wait for the release's round trip to
	// Redis before the answer goes out. Default: the lease ends when the
	// handler returns (its context is cancelled at once), and the key is
	// deleted in the background (lease.Lease.ReleaseAsync), sharing a
	// pipeline with other releases, so a locked request costs one round
	// trip, not two. Until that delete lands, one round trip later (until
	// the TTL if it fails), another replica finds the key held; a client
	// that needs its next request on the same key to succeed on any replica
	// at once sets this (or gives that route a Lease.Wait).
	SyncRelease bool
	// ErrorWriter writes HTTP refusals (HTTP only; GuardConfig has its
	// own). Default (nil): an application/problem+json body of p (with
	// Retry-After when p.RetryAfter is set), without the framing and
	// caching headers the handler may have set before the refusal, and
	// Cache-Control: no-store.
	ErrorWriter func(w http.ResponseWriter, r *http.Request, p *Problem)
}

// GuardConfig configures a Guard (NewGuard). The zero value gives the
// defaults.
type GuardConfig struct {
	// AllowMissingFence passes requests that carry no token (e.g. during a
	// migration) to the handler unchecked. Default: a missing token is
	// refused FENCE_MISSING.
	AllowMissingFence bool
	// Wait bounds how long a request waits for the earlier request on its
	// key to finish; past it the request is answered 503 FENCE_BUSY
	// (UNAVAILABLE on gRPC) with a retry hint, and not admitted. Default 0:
	// the wait ends only with the request's context. That covers a gRPC
	// call's deadline or cancellation and an HTTP client that leaves, but
	// net/http notices an HTTP/1.x client leaving only once the request's
	// body has been read, so a request with a body that waits behind a
	// stuck handler stays until the bound, a server timeout or the handler
	// before it ends. Set a bound a little above the slowest write's time.
	// A negative Wait makes NewGuard panic: read as "no bound", a sign
	// error would let requests wait for ever unnoticed.
	Wait time.Duration
	// Telemetry and Resource say where a Guard records what it refuses
	// itself, before its store is asked: the writes Guarded refuses because
	// their handler had returned (lockwatch.fence.checks with result
	// "late") and malformed tokens (result "malformed"), each with a Warn
	// log. Give them the Telemetry and the resource name of the guard's
	// store, so that these refusals sit beside the store's own checks.
	// Default: one Telemetry on the global providers, and "guard".
	Telemetry *telemetry.Telemetry
	Resource  string
	// ErrorWriter writes the Guard's HTTP refusals, as Config.ErrorWriter
	// says for the holder middleware, with the same default.
	ErrorWriter func(w http.ResponseWriter, r *http.Request, p *Problem)
}

type holderConfig struct {
	lease       lease.Config
	name        string // "": the route or method
	permits     int    // 0: the exclusive lease
	errorWriter func(http.ResponseWriter, *http.Request, *Problem)
	syncRelease bool
}

type guardConfig struct {
	errorWriter  func(http.ResponseWriter, *http.Request, *Problem)
	allowNoFence bool
	guardWait    time.Duration
	tel          *telemetry.Telemetry // nil: the global providers
	resource     string
}

func newHolderConfig(c Config) holderConfig {
	h := holderConfig{lease: c.Lease, name: c.Name, permits: c.Permits, errorWriter: c.ErrorWriter, syncRelease: c.SyncRelease}
	if h.errorWriter == nil {
		h.errorWriter = writeProblem
	}
	return h
}

func newGuardConfig(c GuardConfig) guardConfig {
	g := guardConfig{errorWriter: c.ErrorWriter, allowNoFence: c.AllowMissingFence, guardWait: c.Wait, tel: c.Telemetry, resource: c.Resource}
	if g.errorWriter == nil {
		g.errorWriter = writeProblem
	}
	if g.resource == "" {
		g.resource = "guard"
	}
	return g
}

// httpName is the lock name of an HTTP request: Config.Name, or the
// ServeMux pattern that matched it (set when the middleware wraps a
// handler registered on a Go 1.22+ ServeMux), never the path or key.
func (c *holderConfig) httpName(r *http.Request) string {
	switch {
	case c.name != "":
		return c.name
	case r.Pattern != "":
		return r.Pattern
	}
	return "unrouted"
}

// grpcName is the lock name of a gRPC call: Config.Name, or its full
// method name.
func (c *holderConfig) grpcName(fullMethod string) string {
	if c.name != "" {
		return c.name
	}
	return fullMethod
}

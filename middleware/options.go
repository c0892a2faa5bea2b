package middleware

import (
	"net/http"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// Option configures the holder middleware (HTTP, the gRPC interceptors) and
// the guards.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	leaseOpts    []lease.Option
	httpName     func(*http.Request) string
	grpcName     func(fullMethod string) string
	fenceHeader  string
	errorWriter  func(http.ResponseWriter, *http.Request, *Problem)
	tel          *telemetry.Telemetry
	allowNoFence bool
	guardWait    time.Duration
	syncRelease  bool
}

func newConfig(opts []Option) config {
	c := config{
		httpName:    routeName,
		grpcName:    func(m string) string { return m },
		fenceHeader: "",
		errorWriter: WriteProblem,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// routeName is the default lock name of an HTTP request: the ServeMux
// pattern that matched it (set when the middleware wraps a handler
// registered on a Go 1.22+ ServeMux), never the path or key.
func routeName(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return "unrouted"
}

// WithLeaseOptions passes options to every Acquire: lease.WithWait for a
// bounded wait, lease.WithTTL for a per-route TTL, and so on.
func WithLeaseOptions(opts ...lease.Option) Option {
	return optionFunc(func(c *config) { c.leaseOpts = append(c.leaseOpts, opts...) })
}

// WithHTTPName sets the lock name of an HTTP request, the lock.name metric
// attribute. It must come from a small set (a route, an operation), never
// from the key. Default: r.Pattern, or "unrouted". Nil is ignored.
func WithHTTPName(f func(*http.Request) string) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.httpName = f
		}
	})
}

// WithGRPCName sets the lock name of a gRPC call from its full method name.
// Default: the full method name. Nil is ignored.
func WithGRPCName(f func(fullMethod string) string) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.grpcName = f
		}
	})
}

// WithSyncRelease makes the holder middleware wait for the release's round
// trip to Redis before the answer goes out. Default: the lease ends when the
// handler returns (its context is cancelled at once), and the key is deleted
// in the background (lease.Lease.ReleaseAsync), sharing a pipeline with
// other releases, so a locked request costs one round trip, not two. Until
// that delete lands, one round trip later (until the TTL if it fails),
// another replica finds the key held;
// a client that needs its next request on the same key to succeed on any
// replica at once sets this (or gives that route lease.WithWait).
func WithSyncRelease() Option { return optionFunc(func(c *config) { c.syncRelease = true }) }

// WithFenceHeader makes the HTTP middleware expose the lease's fencing token
// in the response header name (e.g. "Fencing-Token"). Default: not exposed.
func WithFenceHeader(name string) Option {
	return optionFunc(func(c *config) { c.fenceHeader = name })
}

// WithErrorWriter replaces how HTTP refusals are written. Default:
// WriteProblem (application/problem+json). Nil is ignored.
func WithErrorWriter(f func(http.ResponseWriter, *http.Request, *Problem)) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.errorWriter = f
		}
	})
}

// WithTelemetry sets where late completions (holder side) are recorded.
// Default: the Locker's telemetry. Guards record through their store.
func WithTelemetry(t *telemetry.Telemetry) Option {
	return optionFunc(func(c *config) {
		if t != nil {
			c.tel = t
		}
	})
}

// AllowMissingFence makes a guard pass requests that carry no token (e.g.
// during a migration). Default: a missing token is refused.
func AllowMissingFence() Option { return optionFunc(func(c *config) { c.allowNoFence = true }) }

// WithGuardWait bounds how long a Guard lets a request wait for the earlier
// request on its key to finish; past it the request is answered 503
// FENCE_BUSY (UNAVAILABLE on gRPC) with a retry hint, and not admitted.
// Default 0: the wait ends only with the request's context. That covers a
// gRPC call's deadline or cancellation and an HTTP client that leaves, with
// one exception: net/http notices an HTTP/1.x client leaving only once the
// request's body has been read, so a request with a body that waits behind
// a stuck handler stays until the bound, a server timeout or the handler
// before it ends. Set a bound a little above the slowest write's time.
func WithGuardWait(d time.Duration) Option { return optionFunc(func(c *config) { c.guardWait = d }) }

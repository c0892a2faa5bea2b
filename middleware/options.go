package middleware

import (
	"net/http"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// Option configures the holder middleware, HTTP and gRPC alike: HTTP,
// UnaryServerInterceptor and StreamServerInterceptor.
type Option interface {
	HTTPOption
	applyHolder(*holderConfig)
}

// HTTPOption configures the HTTP holder middleware (HTTP): every Option,
// and WithErrorWriter, which only an HTTP answer has a use for.
type HTTPOption interface {
	applyHTTP(*holderConfig)
}

// GuardOption configures a Guard (NewGuard).
type GuardOption interface {
	applyGuard(*guardConfig)
}

type optionFunc func(*holderConfig)

func (f optionFunc) applyHolder(c *holderConfig) { f(c) }
func (f optionFunc) applyHTTP(c *holderConfig)   { f(c) }

type guardOptionFunc func(*guardConfig)

func (f guardOptionFunc) applyGuard(c *guardConfig) { f(c) }

type holderConfig struct {
	leaseOpts   []lease.Option
	name        string // "": the route or method
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

// newHolderConfig applies the options of one holder constructor, each
// through the method of its role.
func newHolderConfig[O any](opts []O, apply func(O, *holderConfig)) holderConfig {
	c := holderConfig{errorWriter: writeProblem}
	for _, o := range opts {
		if any(o) != nil {
			apply(o, &c)
		}
	}
	return c
}

func newGuardConfig(opts []GuardOption) guardConfig {
	c := guardConfig{errorWriter: writeProblem, resource: "guard"}
	for _, o := range opts {
		if o != nil {
			o.applyGuard(&c)
		}
	}
	return c
}

// httpName is the lock name of an HTTP request: WithName's, or the
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

// grpcName is the lock name of a gRPC call: WithName's, or its full
// method name.
func (c *holderConfig) grpcName(fullMethod string) string {
	if c.name != "" {
		return c.name
	}
	return fullMethod
}

// WithLeaseOptions passes options to every Acquire: lease.WithWait for a
// bounded wait, lease.WithTTL for a per-route TTL, and so on. The lock
// name is the middleware's (WithName, else the route or method): a
// lease.WithName here, or on the Locker, is replaced by it.
func WithLeaseOptions(opts ...lease.Option) Option {
	return optionFunc(func(c *holderConfig) { c.leaseOpts = append(c.leaseOpts, opts...) })
}

// WithName sets the lock name of every request the middleware holds a
// lease for: the lock.name attribute of its metrics, spans and logs, and
// the lock_name of its refusals. It must come from a small set (a route,
// an operation), never from the key. Default: the ServeMux pattern that
// matched the HTTP request (r.Pattern, or "unrouted" under a router that
// sets none: give each route's middleware its name), the full method name
// of a gRPC call. Empty is ignored.
func WithName(name string) Option {
	return optionFunc(func(c *holderConfig) {
		if name != "" {
			c.name = name
		}
	})
}

// WithSyncRelease makes the holder middleware wait for the release's round
// trip to Redis before the answer goes out. Default: the lease ends when the
// handler returns (its context is cancelled at once), and the key is deleted
// in the background (lease.Lease.ReleaseAsync), sharing a pipeline with
// other releases, so a locked request costs one round trip, not two. Until
// that delete lands, one round trip later (until the TTL if it fails),
// another replica finds the key held; a client that needs its next request
// on the same key to succeed on any replica at once sets this (or gives that
// route lease.WithWait).
func WithSyncRelease() Option {
	return optionFunc(func(c *holderConfig) { c.syncRelease = true })
}

// WithErrorWriter replaces how HTTP refusals are written, by the HTTP holder
// middleware and by a Guard alike: it is both an HTTPOption and a
// GuardOption. Default: an application/problem+json body of p (with
// Retry-After when p.RetryAfter is set), without the framing and caching
// headers the handler may have set before the refusal, and Cache-Control:
// no-store. Nil is ignored.
func WithErrorWriter(f func(w http.ResponseWriter, r *http.Request, p *Problem)) interface {
	HTTPOption
	GuardOption
} {
	return errorWriter(f)
}

// errorWriter is the option WithErrorWriter returns.
type errorWriter func(http.ResponseWriter, *http.Request, *Problem)

func (f errorWriter) applyHTTP(c *holderConfig) {
	if f != nil {
		c.errorWriter = f
	}
}

func (f errorWriter) applyGuard(c *guardConfig) {
	if f != nil {
		c.errorWriter = f
	}
}

// WithMissingFenceAllowed makes a Guard pass requests that carry no token
// (e.g. during a migration) to the handler unchecked. Default: a missing
// token is refused FENCE_MISSING.
func WithMissingFenceAllowed() GuardOption {
	return guardOptionFunc(func(c *guardConfig) { c.allowNoFence = true })
}

// WithGuardWait bounds how long a Guard lets a request wait for the earlier
// request on its key to finish; past it the request is answered 503
// FENCE_BUSY (UNAVAILABLE on gRPC) with a retry hint, and not admitted.
// Default 0: the wait ends only with the request's context. That covers a
// gRPC call's deadline or cancellation and an HTTP client that leaves, with
// one exception: net/http notices an HTTP/1.x client leaving only once the
// request's body has been read, so a request with a body that waits behind
// a stuck handler stays until the bound, a server timeout or the handler
// before it ends. Set a bound a little above the slowest write's time. A
// negative d makes NewGuard panic: it is a mistake (a sign in a
// configuration, a subtraction gone wrong), which read as "no bound" would
// let requests wait for ever unnoticed.
func WithGuardWait(d time.Duration) GuardOption {
	return guardOptionFunc(func(c *guardConfig) { c.guardWait = d })
}

// WithGuardTelemetry sets where a Guard records what it refuses itself,
// before its store is asked: the writes Guarded refuses because their
// handler had returned (lockwatch.fence.checks with result "late") and
// malformed tokens (result "malformed"), under resource, each with a Warn
// log. Give it the Telemetry and the resource name of the guard's store, so
// that these refusals sit beside the store's own checks. Default:
// telemetry.New() (the global providers) and the resource "guard". A nil t
// or an empty resource is ignored.
func WithGuardTelemetry(t *telemetry.Telemetry, resource string) GuardOption {
	return guardOptionFunc(func(c *guardConfig) {
		if t != nil {
			c.tel = t
		}
		if resource != "" {
			c.resource = resource
		}
	})
}

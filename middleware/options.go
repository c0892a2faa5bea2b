package middleware

import (
	"net/http"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

// Option configures the holder middleware: HTTP, UnaryServerInterceptor and
// StreamServerInterceptor.
type Option interface {
	applyHolder(*holderConfig)
}

// GuardOption configures a Guard (NewGuard).
type GuardOption interface {
	applyGuard(*guardConfig)
}

type optionFunc func(*holderConfig)

func (f optionFunc) applyHolder(c *holderConfig) { f(c) }

type guardOptionFunc func(*guardConfig)

func (f guardOptionFunc) applyGuard(c *guardConfig) { f(c) }

type holderConfig struct {
	leaseOpts   []lease.Option
	httpName    func(*http.Request) string
	grpcName    func(fullMethod string) string
	errorWriter func(http.ResponseWriter, *http.Request, *Problem)
	syncRelease bool
}

type guardConfig struct {
	errorWriter  func(http.ResponseWriter, *http.Request, *Problem)
	allowNoFence bool
	guardWait    time.Duration
}

func newHolderConfig(opts []Option) holderConfig {
	c := holderConfig{
		httpName:    routeName,
		grpcName:    func(m string) string { return m },
		errorWriter: writeProblem,
	}
	for _, o := range opts {
		if o != nil {
			o.applyHolder(&c)
		}
	}
	return c
}

func newGuardConfig(opts []GuardOption) guardConfig {
	c := guardConfig{errorWriter: writeProblem}
	for _, o := range opts {
		if o != nil {
			o.applyGuard(&c)
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
	return optionFunc(func(c *holderConfig) { c.leaseOpts = append(c.leaseOpts, opts...) })
}

// WithHTTPName sets the lock name of an HTTP request, the lock.name metric
// attribute. It must come from a small set (a route, an operation), never
// from the key. Default: r.Pattern, or "unrouted". Nil is ignored.
func WithHTTPName(f func(*http.Request) string) Option {
	return optionFunc(func(c *holderConfig) {
		if f != nil {
			c.httpName = f
		}
	})
}

// WithGRPCName sets the lock name of a gRPC call from its full method name.
// Default: the full method name. Nil is ignored.
func WithGRPCName(f func(fullMethod string) string) Option {
	return optionFunc(func(c *holderConfig) {
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
func WithSyncRelease() Option {
	return optionFunc(func(c *holderConfig) { c.syncRelease = true })
}

// WithErrorWriter replaces how HTTP refusals are written, by the holder
// middleware and by a Guard alike: it is both an Option and a GuardOption.
// Default: an application/problem+json body of p (with Retry-After when
// p.RetryAfter is set), without the framing and caching headers the handler
// may have set before the refusal, and Cache-Control: no-store. Nil is
// ignored.
func WithErrorWriter(f func(w http.ResponseWriter, r *http.Request, p *Problem)) interface {
	Option
	GuardOption
} {
	return errorWriter(f)
}

// errorWriter is the option WithErrorWriter returns.
type errorWriter func(http.ResponseWriter, *http.Request, *Problem)

func (f errorWriter) applyHolder(c *holderConfig) {
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
// before it ends. Set a bound a little above the slowest write's time.
func WithGuardWait(d time.Duration) GuardOption {
	return guardOptionFunc(func(c *guardConfig) { c.guardWait = d })
}

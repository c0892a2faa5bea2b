// Package middleware puts lockwatch leases and fences into net/http and gRPC
// services.
//
// Holder side: HTTP, UnaryServerInterceptor and StreamServerInterceptor run
// each request holding the lease on a key computed from the request. The
// handler's context is the lease's context (cancelled, with lease.ErrLost as
// its cause, before the key can expire); lease.FromContext gives the lease
// for its fence, Remaining and Commit. A stream handler's RecvMsg and
// SendMsg return UNAVAILABLE LEASE_LOST once the lease is lost, also when
// they were blocked on the transport (a client sending or reading nothing),
// so a handler that returns their error stops at the loss like a unary
// handler watching its context. The lock name recorded in metrics is
// the route (r.Pattern) or the gRPC method, never the key. Refusals follow
// one table:
//
//	outcome                              HTTP                  gRPC
//	contended (after the optional wait)  409 + Retry-After     ABORTED      LEASE_CONTENDED + RetryInfo
//	acquire unknown, Redis unavailable   503 + Retry-After     UNAVAILABLE  LEASE_UNKNOWN / LEASE_UNAVAILABLE
//	lease lost before the answer         503 + Retry-After     UNAVAILABLE  LEASE_LOST
//	stale fence at a guarded resource    409                   ABORTED      FENCE_STALE
//	malformed fence                      400                   INVALID_ARGUMENT FENCE_MALFORMED
//	missing fence                        428                   FAILED_PRECONDITION FENCE_MISSING
//	guard's wait for the key given up    503 + Retry-After     the context's status, or UNAVAILABLE FENCE_BUSY
//
// HTTP bodies are application/problem+json with a "reason" member; gRPC
// statuses carry google.rpc.ErrorInfo{reason, domain "lockwatch"}. "Lost
// before the answer" means, for HTTP, that the handler returned without
// writing anything; for gRPC, that it returned an error. A handler that
// answers with success after its lease was lost keeps its answer (it did the
// work; the resource's fence decided whether its write counted) and is
// counted as a late completion, a potential stale write, with an event on
// its span. Leases end when the handler returns, also when it panics (the
// panic goes on); the key's delete in Redis then goes in the background,
// off the request's critical path (WithSyncRelease waits for it).
//
// Client side: RoundTripper, UnaryClientInterceptor and
// StreamClientInterceptor copy the token of the lease on the call's context
// to the Fencing-Token header or fencing-token metadata.
//
// Resource side: a Guard admits each request's token through a fenced store
// (fence.Admitter) before the handler runs, and runs the requests it admits
// for one key one at a time, so a service that serializes its writes behind
// it rejects late writes. One Guard serves HTTP routes (Guard.HTTP) and gRPC
// methods (Guard.UnaryServerInterceptor, Guard.StreamServerInterceptor)
// through one lock table: give every entry point that writes a resource the
// same Guard. Two Guards, or several processes, do not exclude each other;
// such a resource fences at the write (fence.RedisStore.Write,
// a fence.Table).
//
// On the wire, for clients in any language, a token is the decimal digits
// of a positive int64 with no sign, spaces or leading zeros (fence.Parse),
// in exactly one value of the HTTP header Fencing-Token or of the gRPC
// metadata key fencing-token. No value is a missing token; several values,
// or any other form, a malformed one.
package middleware

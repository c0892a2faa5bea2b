// Package middleware puts lockwatch leases and fences into net/http and gRPC
// services.
//
// Holder side: HTTP, UnaryServerInterceptor and StreamServerInterceptor run
// each request holding the lease on a key computed from the request. The
// handler's context is the lease's context (cancelled, with lease.ErrLost as
// its cause, before the key can expire); lease.FromContext gives the lease
// for its fence, Remaining and Commit. A handler that shows its client the
// fence sets the header itself:
//
//	w.Header().Set("Fencing-Token", lease.FromContext(r.Context()).Token().String())
//
// A handler writes through the lease's Commit, with the context and token
// Commit passes to its function, and the token goes to the store that checks
// it in the statement or script that writes (a fence.Table,
// fence.RedisStore.Write):
//
//	l := lease.FromContext(r.Context())
//	err := l.Commit(r.Context(), func(ctx context.Context, token fence.Token) error {
//		return orders.Update(ctx, db, id, token, state) // Commit's ctx
//	})
//	if err != nil {
//		middleware.WriteError(w, r, err) // FENCE_STALE, LEASE_LOST, LEASE_EXPIRING, else 500
//		return
//	}
//
// WriteError answers Commit's refusals and the store's stale rejection as
// the middleware answers its own refusals (the table below); a gRPC handler
// returns the error as it is, and the interceptor does the same.
//
// Commit's context keeps the request's values but not its cancellation. The
// request's context is the lease's, cancelled at a loss: a write made on it is
// cancelled in the client and never reaches the fence, which neither refuses
// nor counts it. A service whose writes go through such a store needs no Guard
// (Resource side, below): the store is its fence. ExampleHTTP_commit shows a
// late write refused.
//
// A stream handler's RecvMsg and SendMsg return LEASE_LOST once the lease is
// lost, also when they were blocked on the transport (a client sending or
// reading nothing), so a handler that returns their error stops at the loss
// like a unary handler watching its context. A request whose lease is lost
// before it is answered (HTTP: the handler returned without writing
// anything; gRPC: it returned an error) is refused LEASE_LOST. A handler
// that answers with success after its lease was lost keeps its answer (it
// did the work; the resource's fence decided whether its write counted) and
// is counted as a late completion, a potential stale write, with an event on
// its span. The lock name recorded in metrics is Config.Name, else the route
// (r.Pattern) or the gRPC method, never the key. Leases end when the handler
// returns, also when it panics (the panic goes on); the key's delete in
// Redis then goes in the background, off the request's critical path
// (Config.SyncRelease waits for it).
//
// Config.Permits bounds a route or method instead of serializing it: each
// request takes one of that many permits of its key's semaphore (package
// permits), a lease of its own, so at most that many requests for the key
// run at once across the replicas, and the next is refused
// PERMITS_SATURATED, after Config.Lease.Wait if set (first come, first
// served). A key function returning a constant bounds the whole route. The
// handler's context, loss, release and late completions are the permit's
// lease's, as above; its token is scoped to the permit's key (permits.Key),
// under which a fenced resource keeps the permit's mark. An acquire costs
// one round trip more than a lease's: the read of which permits are free.
//
// Client side: RoundTripper, UnaryClientInterceptor and
// StreamClientInterceptor copy the token of the lease on the call's context
// to the Fencing-Token header or fencing-token metadata, on every call they
// carry: a resource keyed otherwise refuses it (FENCE_FOREIGN).
//
// Resource side: a Guard admits each request's token through a fenced store
// (fence.Admitter) before the handler runs, and runs the requests it admits
// for one key one at a time, so a service that serializes its writes behind
// it rejects late writes. One Guard serves HTTP routes (Guard.HTTP) and gRPC
// methods (Guard.UnaryServerInterceptor, Guard.StreamServerInterceptor)
// through one lock table: give every entry point that writes a resource the
// same Guard, with key functions that name the resource alike. Two Guards,
// or several processes, do not exclude each other; such a resource fences at
// the write (fence.RedisStore.Write, a fence.Table).
//
// On the wire, for clients in any language, a token is an RFC 9651
// Structured Field Item, "<fence>";s=:<scope>: with ;kid=<id>;mac=:<mac>:
// when signed (SECURITY.md, "The token on the wire", has the grammar and
// how to send it from other languages), in exactly one value of the HTTP
// header Fencing-Token or of the gRPC metadata key fencing-token. A client
// that only forwards a token copies it as it came (lockwatch run gives its
// program LOCKWATCH_FENCE_TOKEN). No value is a missing token; several
// values, or any other form, a malformed one. The bare decimal number of
// earlier versions is a plain token, refused FENCE_UNSCOPED unless the
// store allows it (fence.RedisConfig.PlainTokens).
//
// # Work that outlives its handler
//
// Both sides cover the work that runs until the wrapped handler returns:
// the lease ends then, and so does a Guard's admission (its hold on the
// key). Work the handler leaves running is outside them. Two ways to leave
// it are common: an http.TimeoutHandler inside the middleware, which
// answers 503 at its timeout and returns while the handler runs on in a
// goroutine of its own, and a write handed to a goroutine. Behind a Guard
// with the timeout handler inside, a request admitted with token 41 timed
// out, one with 42 was admitted and wrote, and then 41's handler wrote: the
// resource held 41's value under the mark 42.
//
// Neither side can wait for such work: it cannot see it, and a handler's
// context says nothing about goroutines started from it. So the one safe
// arrangement is that the work ends before the handler returns: put
// http.TimeoutHandler outside (http.TimeoutHandler(g.HTTP(key)(h), d, msg),
// http.TimeoutHandler(HTTP(locker, key)(h), d, msg)), where the middleware
// runs in the timeout handler's goroutine and ends only when h really
// returns, whatever the client was answered meanwhile.
//
// Where work must outlive its handler, its write goes through a check the
// middleware makes at the moment of the write. A check that only asked "is
// the admission still held?" would leave the gap between the answer and the
// write; Guarded instead runs the write inside the admission, which cannot
// end while the write runs, and refuses it once the handler has returned. It
// refuses rather than admitting the late write anew: its client has been
// answered (a timeout's 503 tells it to retry), and the refusal keeps that
// answer true. Each refusal is logged and counted, as
// lockwatch_fence_checks_total{result="late"}: a write the guard cannot
// order any more is a defect of the service that only this count shows. The
// admitted context ends with the admission, ErrNotAdmitted its cause, so
// that work watching it stops. The holder's equivalent is
// lease.Lease.Commit, refused with lease.ErrReleased once the lease has
// ended (counted refused), with the fence passed to the resource. A resource
// that fences every write itself (fence.RedisStore.Write, a fence.Table)
// rejects such a late write as stale.
//
// # Refusals
//
// Each refusal has a reason, the same on both protocols: the "reason"
// member of the HTTP application/problem+json body (whose "type" is
// urn:lockwatch:problem: followed by the reason), and the reason of the
// google.rpc.ErrorInfo of the gRPC status, in domain "lockwatch". A
// holder's refusal also names the lock: the problem's "lock_name" member,
// the ErrorInfo's lock_name metadata. Clients in any language match these
// values:
//
//	reason                   HTTP  gRPC                 retry  when
//	LEASE_CONTENDED          409   ABORTED              yes    another replica, or another request here, holds the lease
//	LEASE_UNKNOWN            503   UNAVAILABLE          yes    Redis did not answer the acquire in time; the work did not run
//	LEASE_UNAVAILABLE        503   UNAVAILABLE          yes    Redis failed or the Locker is closed; the work did not run
//	LEASE_LOST               503   UNAVAILABLE          yes    the lease was lost before the answer; the work may not have completed
//	LEASE_EXPIRING           503   UNAVAILABLE          yes    Commit refused: too little validity left (lease.Config.CommitHard); nothing was written
//	PERMITS_SATURATED        429   RESOURCE_EXHAUSTED   yes    every permit of the key is held (Config.Permits), after the optional wait
//	FENCE_STALE              409   ABORTED              no     a newer lease holder has already written the resource
//	FENCE_MALFORMED          400   INVALID_ARGUMENT     no     the token is not a single value in the wire form
//	FENCE_MISSING            428   FAILED_PRECONDITION  no     the request carries no token
//	FENCE_FOREIGN            403   PERMISSION_DENIED    no     the token was minted for another lock key (or lease namespace)
//	FENCE_FORGED             403   PERMISSION_DENIED    no     the resource has secrets, and the token is not signed with one of them
//	FENCE_AHEAD              403   PERMISSION_DENIED    no     an unsigned token further ahead of the resource's clock than any Locker mints
//	FENCE_UNSCOPED           400   INVALID_ARGUMENT     no     a plain number where the resource accepts only scoped tokens
//	FENCE_BUSY               503   UNAVAILABLE          yes    the wait behind an earlier request for the key was given up; not admitted
//	FENCE_STORE_UNAVAILABLE  503   UNAVAILABLE          yes    the guard's fence store did not answer; the handler did not run
//
// A refusal marked retry carries a Retry-After header (HTTP) and a
// google.rpc.RetryInfo (gRPC): the holder's remaining TTL (at least a
// second) for LEASE_CONTENDED, a second for the others. LEASE_EXPIRING and
// FENCE_STALE answer a handler's write: a gRPC handler returns Commit's
// error as it is, and the interceptors answer it from the table (so do
// they LEASE_LOST). A guarded gRPC call that stops waiting because its own
// context ended gets that context's status (CANCELED, DEADLINE_EXCEEDED)
// instead of FENCE_BUSY.
package middleware

package middleware

import (
	"context"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/lockwatch/lockwatch/fence"
)

// Client side: calls made on a lease's context (or any context carrying a
// token, fence.NewContext) carry its fencing token to the resource, which a
// guard or fenced store then checks.

// RoundTripper returns an http.RoundTripper that sets the Fencing-Token
// header from the request's context, in the token's wire form, then calls
// next (nil: http.DefaultTransport). Requests without a token pass
// unchanged.
//
// Every request through it carries the token, whatever its destination.
// A token names the key it was minted for, so a guarded service keyed
// otherwise refuses it (FENCE_FOREIGN) without moving its mark; install
// the propagators on the clients of resources the lock protects, so that
// calls elsewhere are not refused for a token they never needed.
func RoundTripper(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper{next}
}

type roundTripper struct{ next http.RoundTripper }

// CloseIdleConnections lets http.Client.CloseIdleConnections reach next.
func (rt roundTripper) CloseIdleConnections() {
	if c, ok := rt.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, ok := fence.FromContext(r.Context())
	if !ok {
		return rt.next.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	r.Header.Set(tokenHeader, tok.String())
	return rt.next.RoundTrip(r)
}

// UnaryClientInterceptor puts the context's token in the outgoing metadata
// (fencing-token), replacing any value already there: two values would be
// refused as malformed. Like RoundTripper, it sends the token on every
// call, whatever the destination.
func UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(withOutgoingToken(ctx), method, req, reply, cc, opts...)
	}
}

// StreamClientInterceptor is UnaryClientInterceptor for streams.
func StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(withOutgoingToken(ctx), desc, cc, method, opts...)
	}
}

func withOutgoingToken(ctx context.Context) context.Context {
	tok, ok := fence.FromContext(ctx)
	if !ok {
		return ctx
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(tokenMetadata, tok.String())
	return metadata.NewOutgoingContext(ctx, md)
}

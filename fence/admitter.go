package fence

import "context"

// Admitter admits requests by their fencing token, for a service that
// serializes its writes behind a guard (HTTP middleware, a gRPC interceptor)
// instead of storing them through a fenced store. RedisStore implements it.
//
// Admit advances key's high-water mark to token when token is at least the
// mark (one lease may send several requests), and returns a *StaleError
// (errors.Is ErrStale) when it is older. key is the lock key the token must
// have been minted for: a token the store cannot trust for it is refused
// (ErrForeign, ErrForged, ErrAhead, ErrUnscoped; see Token) and leaves the
// mark alone. Any other error means the check could not be made, and the
// mark may or may not have moved: the request must not proceed.
type Admitter interface {
	Admit(ctx context.Context, key string, token Token) error
}

var _ Admitter = (*RedisStore)(nil)

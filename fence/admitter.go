package fence

import "context"

// Admitter admits requests by their fencing token, for a service that
// serializes its writes behind a guard (HTTP middleware, a gRPC
// interceptor) instead of storing them through a fenced store.
//
// Admit advances key's high-water mark to token when token is at least the
// mark, and returns a *StaleError (errors.Is ErrStale) when it is older. An
// equal token is admitted: one lease may send several requests. key is the
// lock key the token must have been minted for: a token the store cannot
// trust for it is refused as Token describes (ErrForeign, ErrForged,
// ErrAhead, ErrUnscoped) and leaves the mark alone. Any other error means
// the check could not be made, and the request must not proceed.
//
// RedisStore implements it.
type Admitter interface {
	Admit(ctx context.Context, key string, token Token) error
}

var _ Admitter = (*RedisStore)(nil)

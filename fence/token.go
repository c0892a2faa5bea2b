package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Token is a fencing token: positive, strictly increasing per lock key
// (lease.Lease.Fence). Tokens minted by lockwatch stay below 2^53.
type Token int64

// Errors of the resource side, for errors.Is.
var (
	// ErrMalformed: a token that is not a single positive decimal int64.
	ErrMalformed = errors.New("fence: malformed token")
	// ErrStale: a write whose token is older than (or, for the stores'
	// writes, equal to) one the resource already accepted from another
	// write. *StaleError has the high-water mark.
	ErrStale = errors.New("fence: stale token")
)

// StaleError is a rejected write: Token is the write's, HighWater the newest
// the resource had accepted.
type StaleError struct {
	Resource  string
	Token     Token
	HighWater Token
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale token %d at %s: %d already accepted", e.Token, e.Resource, e.HighWater)
}

// Unwrap makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Unwrap() error { return ErrStale }

// String formats the token in the canonical form Parse reads: the form it
// travels in between services.
func (t Token) String() string { return strconv.FormatInt(int64(t), 10) }

// Parse reads one token in its canonical form: decimal digits only, no sign,
// no spaces, no leading zeros, between 1 and the int64 maximum. Anything
// else is ErrMalformed, with the reason: a lenient parser would let "+41",
// " 41" or "041" reach the comparison as something other than what was sent.
func Parse(s string) (Token, error) {
	switch {
	case s == "":
		return 0, fmt.Errorf("%w: empty", ErrMalformed)
	case len(s) > 19:
		return 0, fmt.Errorf("%w: %d digits overflow int64", ErrMalformed, len(s))
	case s[0] == '0':
		return 0, fmt.Errorf("%w: %q: zero or a leading zero", ErrMalformed, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %q: byte %d is not a decimal digit", ErrMalformed, s, i)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q overflows int64", ErrMalformed, s)
	}
	return Token(n), nil
}

type ctxKey struct{}

// NewContext returns ctx carrying token: what a lease's context carries, and
// what the client-side propagators put on outgoing calls.
func NewContext(ctx context.Context, token Token) context.Context {
	return context.WithValue(ctx, ctxKey{}, token)
}

// FromContext returns the token ctx carries, if any.
func FromContext(ctx context.Context) (Token, bool) {
	t, ok := ctx.Value(ctxKey{}).(Token)
	return t, ok
}

package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Token is a fencing token: the fence, strictly increasing per lock key, and
// what lets a resource trust it: the lock key it was minted for (Scope) and,
// when the Lockers have secrets, the signature of the Locker that minted it.
// lease.Lease.Token returns one; String and Parse are its wire form
// (SECURITY.md, "The token on the wire"). A resource refuses a token it
// cannot trust for its key before comparing its fence (the package doc,
// "Tokens a resource can trust").
//
// Token is comparable: two tokens are equal when all their fields are.
type Token struct {
	// Fence is the number: positive, strictly increasing per lock key,
	// minted from Redis TIME in microseconds (below 2^53).
	Fence int64
	// Scope is the lock key the token was minted for (ScopeOf). The zero
	// Scope is a plain token, the bare number of earlier versions, which
	// a resource refuses unless it allows plain tokens.
	Scope Scope
	// KeyID names the secret that signed the token; "" when unsigned.
	KeyID string
	// MAC is the signature (Secrets), meaningful only with a KeyID.
	MAC [macSize]byte
}

// Errors of the resource side, for errors.Is.
var (
	// ErrMalformed: a token that is not in its wire form, or whose fence is
	// not a positive int64.
	ErrMalformed = errors.New("fence: malformed token")
	// ErrStale: a write whose token is older than (or, for the stores'
	// writes, equal to) one the resource already accepted from another
	// write. *StaleError has the high-water mark.
	ErrStale = errors.New("fence: stale token")
	// ErrForeign: a token minted for another lock key (or another lease
	// namespace) than the one the resource checks it against.
	ErrForeign = errors.New("fence: token minted for another key")
	// ErrForged: with secrets configured, a token that is unsigned, signed
	// with an unknown key id, or whose signature does not match.
	ErrForged = errors.New("fence: token not signed by a Locker")
	// ErrAhead: an unsigned token whose fence is further ahead of the
	// resource's clock than the allowed skew: not one a Locker minted.
	ErrAhead = errors.New("fence: token ahead of every minted fence")
	// ErrUnscoped: a plain token (a bare number, no Scope) where the
	// resource does not allow plain tokens.
	ErrUnscoped = errors.New("fence: plain token without a scope")
)

// StaleError is a rejected write: Token is the write's, HighWater the fence
// of the newest token the resource had accepted.
type StaleError struct {
	Resource  string
	Token     Token
	HighWater int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale token %d at %s: %d already accepted", e.Token.Fence, e.Resource, e.HighWater)
}

// Unwrap makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Unwrap() error { return ErrStale }

// IsPlain tells a plain token: a bare number, minted for no particular key.
func (t Token) IsPlain() bool { return t.Scope == Scope{} }

// String is the token's wire form, which Parse reads: an RFC 9651
// Structured Field Item (SECURITY.md, "The token on the wire"), or for a
// plain token its bare decimal fence.
func (t Token) String() string { return string(t.appendWire(nil)) }

// parseFence reads a fence in its canonical form, decimal digits from 1 to
// the int64 maximum without sign, spaces or leading zeros; anything else is
// ErrMalformed, with the reason, so that "+41", " 41" or "041" never reach
// the comparison as something other than what was sent.
func parseFence(s string) (int64, error) {
	switch {
	case s == "":
		return 0, fmt.Errorf("%w: empty fence", ErrMalformed)
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
	return n, nil
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

package middleware

import (
	"errors"
	"fmt"

	"github.com/lockwatch/lockwatch/fence"
)

// The names a token travels under, in fence.Token.String's form (the wire
// form of SECURITY.md); the package doc gives them to clients in other
// languages.
const (
	tokenHeader   = "Fencing-Token" // HTTP
	tokenMetadata = "fencing-token" // gRPC
)

// errMissing: no token where one is required.
var errMissing = errors.New("middleware: missing fencing token")

// parseValues reads the token from all the values a header or metadata key
// carried: exactly one value, in fence.Parse's form. None is errMissing;
// several are fence.ErrMalformed (a proxy that appends a second value must
// not get to choose which one counts, nor a client send the old and the new
// form side by side).
func parseValues(values []string) (fence.Token, error) {
	switch len(values) {
	case 0:
		return fence.Token{}, errMissing
	case 1:
		return fence.Parse(values[0])
	}
	return fence.Token{}, fmt.Errorf("%w: %d values, want one", fence.ErrMalformed, len(values))
}

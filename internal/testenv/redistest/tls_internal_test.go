package redistest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A redis-server built without TLS rejects the tls-* directives; StartTLS
// must tell that apart from any other start failure.
func TestTLSUnsupported(t *testing.T) {
	for msg, want := range map[string]bool{
		"*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n>>> 'tls-port \"6380\"'\nBad directive or wrong number of arguments": true,
		"redis-server exited during start: TLS is not supported in this build":                                                true,
		"redis-server exited during start: exit status 1\nFailed listening on port 6380 (tls), aborting.":                     false,
		"redis-server not ready after 30s: connection refused":                                                                false,
	} {
		assert.Equal(t, want, tlsUnsupported(errors.New(msg)), msg)
	}
}

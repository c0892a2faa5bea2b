package fence

import (
	"crypto/sha256"
	"encoding/binary"
)

// Scope names the lock key a token was minted for, without the key: the
// first 96 bits of SHA-256 over the lease namespace and the key. A resource
// computes the scope of the key it checks and compares; it never needs the
// key in the token, and the token does not reveal it. 96 bits put an
// accidental collision between two keys beyond reach (about 2^48 keys for
// an even chance), and a chosen one needs a lease on the colliding key,
// which the signature (Secrets) binds to the scope.
type Scope [scopeSize]byte

const scopeSize = 12

// ScopeOf returns the scope of key in the lease namespace namespace (the
// Locker's lease.Config.Namespace, "lockwatch" by default): the same pair
// the lease's Redis keys are derived from, so two Lockers of one namespace
// mint tokens of one scope for one key, and two namespaces never share a
// scope. The namespace's length goes first, so that no (namespace, key)
// pair can be read as another, whatever bytes the key holds.
func ScopeOf(namespace, key string) Scope {
	h := sha256.New()
	h.Write([]byte("lockwatch-scope\x00"))
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(namespace))))
	h.Write([]byte(namespace))
	h.Write([]byte(key))
	var s Scope
	copy(s[:], h.Sum(nil))
	return s
}

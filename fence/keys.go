package fence

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Key derivation. A caller's key is request input and untrusted: it may be
// long, binary, or contain the braces that choose a Redis Cluster slot (and
// so let a caller pile every key on one shard). It never appears in Redis as
// is. A RedisStore keeps each key in one hash,
//
//	<namespace>:<resource>:{<h>}
//
// where h is the first 128 bits of SHA-256(key) in hex. The hash tag {h}
// spreads keys evenly over the slots whatever the input; namespace and
// resource have no braces (validated), so {h} is the only tag; every key
// costs the same few bytes however long the input. The namespace and
// resource stay readable, so that an operator can find a resource's records
// with SCAN MATCH.

// maxName bounds a namespace or resource name.
const maxName = 64

func (s *RedisStore) redisKey(key string) string {
	return s.prefix + "{" + keyHash(key) + "}"
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// validName checks a namespace or resource: 1 to 64 bytes of printable
// ASCII without spaces or braces.
func validName(what, name string) error {
	if name == "" || len(name) > maxName {
		return fmt.Errorf("%s must be 1 to %d bytes, got %d", what, maxName, len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == '{' || c == '}' {
			return fmt.Errorf("%s %q: byte %d (%q) is not printable ASCII without spaces or braces", what, name, i, c)
		}
	}
	return nil
}

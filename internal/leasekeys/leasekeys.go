// Package leasekeys derives the Redis keys of a lease. A caller key is
// request input and untrusted: it may be long, binary, or contain the
// braces that choose a Redis Cluster slot. So the key never appears in
// Redis as is. The Redis keys of a lease are
//
//	<namespace>:{<h>}:l   the lock (owner token, TTL)
//	<namespace>:{<h>}:f   the fence record (last token minted, then the
//	                      owner tokens of the attempts that ended, barred:
//	                      "<fence>/<owner>...~<owner>...", scripts/record.lua)
//	<namespace>:{<h>}:w   the wait mark: set while an Acquire may wait, so
//	                      that the release publishes on <namespace>:{<h>}:r
//	                      (wakeups)
//
// where h is the first 128 bits of SHA-256(namespace, 0x00, key) in hex. The
// hash tag {h} puts them in one slot (the scripts touch both atomically), the
// namespace has no braces (validated), so the caller cannot pick the slot, and
// every key costs the same few bytes however long the input. The 0x00
// separator cannot occur in a namespace, so (namespace, key) pairs never
// collide. A SHA-256 per acquire costs well under a microsecond.
package leasekeys

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNamespace is the longest namespace in bytes (the lease package
// validates it): Derive's buffers are sized for it.
const MaxNamespace = 64

// Derive returns the lock key, the fence key and the wait mark of key in
// namespace, all in one allocation.
func Derive(namespace, key string) (lock, fence, mark string) {
	var small [256]byte // keys up to this size are hashed without an allocation
	in := append(append(append(small[:0], namespace...), 0), key...)
	sum := sha256.Sum256(in)
	// One string holds the three keys: "<ns>:{h}:l<ns>:{h}:f<ns>:{h}:w".
	var buf [3 * (MaxNamespace + 2 + 32 + 3)]byte
	b := append(append(buf[:0], namespace...), ":{"...)
	b = hex.AppendEncode(b, sum[:16])
	b = append(b, "}:l"...)
	n := len(b)
	b = append(append(b, b[:n-1]...), 'f')
	b = append(append(b, b[:n-1]...), 'w')
	all := string(b)
	return all[:n], all[n : 2*n], all[2*n:]
}

// HashTag returns the hash of a derived key (the part between the braces):
// what spans carry instead of the caller's key.
func HashTag(redisKey string) string {
	open := strings.IndexByte(redisKey, '{')
	return redisKey[open+1 : open+1+2*16]
}

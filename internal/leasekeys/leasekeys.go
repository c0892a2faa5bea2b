// Package leasekeys is a lease's layout in Redis, named once for the Go
// code and the Lua scripts: the names of its keys (Of), a Locker's grant
// channel (GrantChannel), and the format of its fence record (Record, the
// reference for lease/scripts/record.lua).
//
// A caller key is request input and untrusted: it may be long, binary, or
// contain the braces that choose a Redis Cluster slot. So the key never
// appears in Redis as is. The names of a lease are
//
//	<namespace>:{<h>}:l   the lock (owner token, TTL)
//	<namespace>:{<h>}:f   the fence record (Record)
//	<namespace>:{<h>}:q   the wait queue: the waiters' owner tokens, oldest
//	                      first (a list)
//	<namespace>:{<h>}:e   the queue's entries: owner token -> "<expiry ms on
//	                      the server's TIME> <lease TTL ms> <grant channel>"
//	                      (a hash)
//
// where h is the first 128 bits of SHA-256(namespace, 0x00, key) in hex.
// The hash tag {h} puts the keys in one slot (the scripts touch them
// atomically), the namespace has no braces (validated), so the caller
// cannot pick the slot, and every key costs the same few bytes however long
// the input. The 0x00 separator cannot occur in a namespace, so (namespace,
// key) pairs never collide. A SHA-256 per acquire costs well under a
// microsecond.
package leasekeys

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNamespace is the longest namespace in bytes (the lease package
// validates it): Derive's buffers are sized for it.
const MaxNamespace = 64

// Keys are the Redis names of one lease. The scripts get them as KEYS:
// no script derives one from another.
type Keys struct {
	Lock    string // the owner token, expiring after the TTL
	Fence   string // the fence record (Record)
	Queue   string // the wait queue, owner tokens oldest first (a list)
	Entries string // the queue's entries by owner token (a hash)
}

// Of returns the names of key's lease in namespace, all in one allocation.
func Of(namespace, key string) Keys {
	var small [256]byte // keys up to this size are hashed without an allocation
	in := append(append(append(small[:0], namespace...), 0), key...)
	sum := sha256.Sum256(in)
	var h [HashLen]byte
	hex.Encode(h[:], sum[:HashLen/2])
	return ofHash(namespace, h[:])
}

// HashLen is the length of a key's hash in hex, as HashTag returns it.
const HashLen = 2 * 16

// OfHash returns the names of the lease whose key hashes to hash in
// namespace (hash as HashTag returns it, which ValidHash checks): what an
// operator who sees only the hash (spans, logs, the debug page) names.
func OfHash(namespace, hash string) Keys { return ofHash(namespace, []byte(hash)) }

// ValidHash tells whether h is a key's hash as HashTag returns it:
// HashLen lower-case hex digits.
func ValidHash(h string) bool {
	if len(h) != HashLen {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func ofHash(namespace string, hash []byte) Keys {
	// One string holds the four names: "<ns>:{h}:l<ns>:{h}:f...<ns>:{h}:e".
	var buf [4 * (MaxNamespace + 2 + HashLen + 3)]byte
	b := append(append(buf[:0], namespace...), ":{"...)
	b = append(b, hash...)
	b = append(b, "}:l"...)
	n := len(b)
	for _, suffix := range []byte{'f', 'q', 'e'} {
		b = append(append(b, b[:n-1]...), suffix)
	}
	all := string(b)
	return Keys{
		Lock: all[:n], Fence: all[n : 2*n], Queue: all[2*n : 3*n],
		Entries: all[3*n:],
	}
}

// GrantChannel is the channel a hand-off publishes the grants of a
// Locker's waiters on, "<namespace>:{<id>}:g", id the Locker's own: the
// enqueuing script stores it in the waiter's entry, and only that Locker
// subscribes to it. The braces put it under the lease's ACL channel
// pattern <namespace>:{*, and spread the Lockers' channels over a
// cluster's slots (their subscriptions over its nodes).
func GrantChannel(namespace, id string) string {
	return namespace + ":{" + id + "}:g"
}

// HashTag returns the hash of a derived key (the part between the braces):
// what spans carry instead of the caller's key.
func HashTag(redisKey string) string {
	open := strings.IndexByte(redisKey, '{')
	return redisKey[open+1 : open+1+HashLen]
}

package lease

import "github.com/lockwatch/lockwatch/internal/leasekeys"

// The Redis keys of a lease and why they look as they do: internal/leasekeys
// (the chaos harness derives them too, to find a lease's slot).

const maxNamespace = leasekeys.MaxNamespace

// keysOf returns the Redis names of key's lease in namespace.
func keysOf(namespace, key string) leasekeys.Keys { return leasekeys.Of(namespace, key) }

func hashTag(redisKey string) string { return leasekeys.HashTag(redisKey) }

func validNamespace(ns string) error {
	if ns == "" || len(ns) > maxNamespace {
		return invalidf("namespace must be 1 to %d bytes, got %d", maxNamespace, len(ns))
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; c <= ' ' || c > '~' || c == '{' || c == '}' {
			return invalidf("namespace %q: byte %d (%q) is not printable ASCII without spaces or braces", ns, i, c)
		}
	}
	return nil
}

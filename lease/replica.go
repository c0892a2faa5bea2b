package lease

import "crypto/rand"

// maxReplica bounds Config.Replica: it rides along every owner token, in
// the lock, the wait queue and the fence record's bar lists.
const maxReplica = 64

// validReplica checks Config.Replica. Its bytes are none that the scripts
// or the grant messages split on: a space ("<owner> <fence>"), the bar
// lists' marks (/ + ! ~) or the '@' before the name.
func validReplica(name string) error {
	if len(name) > maxReplica {
		return invalidf("replica name must be at most %d bytes, got %d", maxReplica, len(name))
	}
	for i := 0; i < len(name); i++ {
		if !replicaByte(name[i]) {
			return invalidf("replica name %q: byte %d (%q) is not one of [A-Za-z0-9._:-]", name, i, name[i])
		}
	}
	return nil
}

func replicaByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c == '.' || c == '_' || c == ':' || c == '-'
}

// newOwner returns a fresh owner token for an attempt: 26 random base32
// characters, the secret that releases or renews its lease, then "@" and
// the replica name when the Locker has one (suffix, settings.ownerSuffix).
// Every script compares whole tokens, so the name changes none of their
// decisions; acquire.lua, refresh.lua and inspect.lua answer the part after
// the last '@', which the random part (no '@' in base32) never reaches.
func newOwner(suffix string) string {
	return rand.Text() + suffix
}

// replicaIn is the holder's replica a contended reply names, its last
// element: "" when it is not a string a Config.Replica could be (a lock
// written by something other than lockwatch), so that no other text of
// Redis reaches a refusal.
func replicaIn(vals []any) string {
	name, _ := vals[len(vals)-1].(string)
	if validReplica(name) != nil {
		return ""
	}
	return name
}

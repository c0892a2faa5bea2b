package fence

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Secrets are the shared secrets that sign tokens (the Lockers') and verify
// them (the resources'): with them a resource refuses every token a Locker
// holding one of the secrets did not mint (ErrForged), whatever its number
// or scope. Every secret has an id, carried in the token (kid), so that
// secrets rotate without downtime (SECURITY.md, "Secrets", gives the steps).
// A signature is HMAC-SHA256, truncated to 128 bits, over the key id, the
// scope and the fence. A Secrets is safe for concurrent use.
type Secrets struct {
	active string
	keys   map[string][]byte
}

const (
	macSize      = 16
	minSecret    = 32 // bytes: the strength of HMAC-SHA256's key
	maxKeyID     = 32
	macDomain    = "lockwatch-token-v1\x00"
	secretsUsage = "id=BASE64,... (the first is the active one)"
)

// NewSecrets returns the secrets keys, signing with keys[active]. Key ids
// are 1 to 32 bytes of [a-z0-9_-] starting with a letter; secrets at least
// 32 bytes (crypto/rand.Read fills one).
func NewSecrets(active string, keys map[string][]byte) (*Secrets, error) {
	if _, ok := keys[active]; !ok {
		return nil, fmt.Errorf("fence: secrets: active id %q is not among the keys", active)
	}
	s := &Secrets{active: active, keys: make(map[string][]byte, len(keys))}
	for _, id := range slices.Sorted(maps.Keys(keys)) {
		if err := validKeyID(id); err != nil {
			return nil, fmt.Errorf("fence: secrets: %w", err)
		}
		if len(keys[id]) < minSecret {
			return nil, fmt.Errorf("fence: secrets: secret %q has %d bytes, want at least %d", id, len(keys[id]), minSecret)
		}
		s.keys[id] = slices.Clone(keys[id])
	}
	return s, nil
}

// ParseSecrets reads secrets in their text form, "id=BASE64,id=BASE64", the
// first being the active one: the form of the LOCKWATCH_TOKEN_SECRETS
// environment variable that lockwatch run reads. Its errors name the item
// that is wrong by its place, never by its text: a secret mistyped where an
// id belongs must not reach a log.
func ParseSecrets(text string) (*Secrets, error) {
	keys := map[string][]byte{}
	var active string
	for i, item := range strings.Split(strings.TrimSpace(text), ",") {
		id, enc, ok := strings.Cut(strings.TrimSpace(item), "=")
		var key []byte
		var err error
		switch {
		case !ok:
			return nil, fmt.Errorf("fence: secrets: item %d is not %s", i+1, secretsUsage)
		case validKeyID(id) != nil:
			return nil, fmt.Errorf("fence: secrets: item %d: %w", i+1, errKeyID)
		}
		if key, err = base64.StdEncoding.DecodeString(enc); err != nil {
			return nil, fmt.Errorf("fence: secrets: item %d: the secret is not base64", i+1)
		}
		switch _, dup := keys[id]; {
		case dup:
			return nil, fmt.Errorf("fence: secrets: item %d repeats an earlier id", i+1)
		case len(key) < minSecret:
			return nil, fmt.Errorf("fence: secrets: item %d: the secret has %d bytes, want at least %d", i+1, len(key), minSecret)
		}
		if i == 0 {
			active = id
		}
		keys[id] = key
	}
	return NewSecrets(active, keys)
}

// Mint returns the token of fence for key in the lease namespace namespace,
// signed with the active secret of s (unsigned when s is nil): the token a
// lease of that key carries. lease mints with it; a test of a guarded
// service can too.
func Mint(namespace, key string, fence int64, s *Secrets) Token {
	t := Token{Fence: fence, Scope: ScopeOf(namespace, key)}
	if s != nil {
		t.KeyID = s.active
		t.MAC = s.mac(s.keys[s.active], t)
	}
	return t
}

func (s *Secrets) mac(key []byte, t Token) (sum [macSize]byte) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(macDomain))
	m.Write([]byte(t.KeyID))
	m.Write([]byte{0})
	m.Write(t.Scope[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(t.Fence))
	m.Write(n[:])
	copy(sum[:], m.Sum(nil))
	return sum
}

// verify tells whether t was signed with one of the secrets.
func (s *Secrets) verify(t Token) error {
	if t.KeyID == "" {
		return fmt.Errorf("%w: unsigned", ErrForged)
	}
	key, ok := s.keys[t.KeyID]
	if !ok {
		return fmt.Errorf("%w: unknown key id %q", ErrForged, t.KeyID)
	}
	if want := s.mac(key, t); !hmac.Equal(want[:], t.MAC[:]) {
		return fmt.Errorf("%w: signature does not match", ErrForged)
	}
	return nil
}

var errKeyID = errors.New("key id must be 1 to 32 bytes of [a-z0-9_-], starting with a letter")

func validKeyID(id string) error {
	if id == "" || len(id) > maxKeyID || id[0] < 'a' || id[0] > 'z' {
		return fmt.Errorf("%w: %q", errKeyID, id)
	}
	for i := 0; i < len(id); i++ {
		if !keyIDByte(id[i]) {
			return fmt.Errorf("%w: %q", errKeyID, id)
		}
	}
	return nil
}

func keyIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

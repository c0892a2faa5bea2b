package fence

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// The wire form (SECURITY.md, "The token on the wire") is an RFC 9651
// Structured Field Item:
//
//	"1796123456789012";s=:q83vEjRWeJASNFZ4:                    unsigned
//	"1796123456789012";s=:q83vEjRWeJASNFZ4:;kid=k1;mac=:...:    signed
//
// The fence is an sf-string because Structured Fields stop integers at 15
// digits and fences have 16. Parse reads exactly this grammar and nothing
// else: RFC 9651 lets a parser ignore unknown parameters, but a token is a
// credential, so lockwatch refuses a form it cannot check in full.

// maxWire bounds the wire form: a signed token is under 100 bytes. Parse
// refuses longer input before reading it, so a huge header costs nothing.
const maxWire = 256

var b64 = base64.StdEncoding.Strict()

func (t Token) appendWire(b []byte) []byte {
	if t.IsPlain() {
		return strconv.AppendInt(b, t.Fence, 10)
	}
	b = append(b, '"')
	b = strconv.AppendInt(b, t.Fence, 10)
	b = append(b, `";s=:`...)
	b = b64.AppendEncode(b, t.Scope[:])
	b = append(b, ':')
	if t.KeyID != "" {
		b = append(b, ";kid="...)
		b = append(b, t.KeyID...)
		b = append(b, ";mac=:"...)
		b = b64.AppendEncode(b, t.MAC[:])
		b = append(b, ':')
	}
	return b
}

// Parse reads a token in its wire form (String's), or a plain token's bare
// decimal. Anything else is ErrMalformed, with the reason.
func Parse(s string) (Token, error) {
	if len(s) > maxWire {
		return Token{}, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(s), maxWire)
	}
	s = strings.Trim(s, " ")
	if s == "" || s[0] != '"' {
		n, err := parseFence(s)
		return Token{Fence: n}, err
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return Token{}, fmt.Errorf("%w: unterminated string", ErrMalformed)
	}
	n, err := parseFence(s[1 : 1+end])
	if err != nil {
		return Token{}, err
	}
	t := Token{Fence: n}
	var seen params
	for rest := s[2+end:]; rest != ""; {
		if rest[0] != ';' {
			return Token{}, fmt.Errorf("%w: %q after the fence, want ';'", ErrMalformed, rest[0])
		}
		rest = strings.TrimLeft(rest[1:], " ")
		var key, val string
		key, rest, _ = strings.Cut(rest, "=")
		i := strings.IndexByte(rest, ';')
		if i < 0 {
			i = len(rest)
		}
		val, rest = rest[:i], rest[i:]
		if err := seen.set(&t, key, val); err != nil {
			return Token{}, err
		}
	}
	switch {
	case !seen.s || t.IsPlain():
		return Token{}, fmt.Errorf("%w: no scope (s) or a zero scope", ErrMalformed)
	case seen.kid != seen.mac:
		return Token{}, fmt.Errorf("%w: kid and mac go together", ErrMalformed)
	}
	return t, nil
}

// params records which of a token's parameters Parse has read.
type params struct{ s, kid, mac bool }

// set reads the parameter key=val into t, once.
func (p *params) set(t *Token, key, val string) error {
	switch key {
	case "s":
		return decodeParam(&p.s, key, val, t.Scope[:])
	case "kid":
		if p.kid {
			return fmt.Errorf("%w: parameter kid repeated", ErrMalformed)
		}
		p.kid, t.KeyID = true, val
		if err := validKeyID(val); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return nil
	case "mac":
		return decodeParam(&p.mac, key, val, t.MAC[:])
	}
	return fmt.Errorf("%w: unknown parameter %q", ErrMalformed, key)
}

// decodeParam decodes a byte-sequence parameter (:base64:) of exactly
// len(dst) bytes into dst, once.
func decodeParam(seen *bool, key, val string, dst []byte) error {
	if *seen {
		return fmt.Errorf("%w: parameter %s repeated", ErrMalformed, key)
	}
	*seen = true
	if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
		return fmt.Errorf("%w: parameter %s is not a byte sequence (:base64:)", ErrMalformed, key)
	}
	enc := val[1 : len(val)-1]
	if len(enc) != b64.EncodedLen(len(dst)) {
		return fmt.Errorf("%w: parameter %s is not %d bytes in padded base64", ErrMalformed, key, len(dst))
	}
	if n, err := b64.Decode(dst, []byte(enc)); err != nil || n != len(dst) {
		return fmt.Errorf("%w: parameter %s is not %d bytes in padded base64", ErrMalformed, key, len(dst))
	}
	return nil
}

package faultproxy

import (
	"bytes"
	"errors"
	"strconv"
)

// The proxy reads RESP only to find where one command ends and the next
// begins: a copy of a command (Duplicate) must be a whole command, or Redis
// would read the rest of the stream shifted by a fragment.

var errFrame = errors.New("faultproxy: malformed RESP")

// maxPending bounds the bytes kept for one incomplete frame: a client that
// sends more than this in one command is not one the proxy copies.
const maxPending = 4 << 20

// frameLen returns the length of the first complete RESP value at the start
// of b (RESP2 or RESP3; an inline command is one line), or 0 when b does not
// yet hold one.
func frameLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	line := bytes.IndexByte(b, '\n')
	switch line {
	case -1:
		return 0, nil
	case 0:
		return 1, nil // a bare newline: a replica's keep-alive to its primary
	}
	head := bytes.TrimSuffix(b[1:line], []byte("\r"))
	n := line + 1
	switch b[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return n, nil
	case '$', '=', '!': // length-prefixed: -1 is a null
		size, err := strconv.Atoi(string(head))
		switch {
		case err != nil:
			return 0, errFrame
		case size < 0:
			return n, nil
		case len(b) < n+size+2:
			return 0, nil
		}
		return n + size + 2, nil
	case '*', '~', '>', '%', '|': // aggregates: maps and attributes have pairs
		count, err := strconv.Atoi(string(head))
		if err != nil {
			return 0, errFrame
		}
		if b[0] == '%' || b[0] == '|' {
			count *= 2
		}
		if b[0] == '|' {
			count++ // an attribute precedes the value it annotates
		}
		for range count {
			m, err := frameLen(b[n:])
			if m == 0 || err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	}
	return n, nil // an inline command
}

// frames splits one direction of a connection into whole RESP values,
// however the stream was cut into chunks.
type frames struct {
	pending []byte
	broken  bool // the stream stopped parsing: nothing from it is copied any more
}

// add takes the next chunk and returns the values it completed, each a copy.
func (f *frames) add(chunk []byte) [][]byte {
	if f.broken {
		return nil
	}
	f.pending = append(f.pending, chunk...)
	var out [][]byte
	for {
		n, err := frameLen(f.pending)
		if err != nil || (n == 0 && len(f.pending) > maxPending) {
			f.broken, f.pending = true, nil
			return out
		}
		if n == 0 {
			return out
		}
		out = append(out, bytes.Clone(f.pending[:n]))
		f.pending = f.pending[n:]
		if len(f.pending) == 0 {
			f.pending = nil // do not pin a large buffer
		}
	}
}

// commandName is the first word of a command, upper-cased: the first bulk
// string of an array, or of an inline line.
func commandName(frame []byte) string {
	if len(frame) > 0 && frame[0] == '*' {
		rest := frame[bytes.IndexByte(frame, '\n')+1:]
		if len(rest) == 0 || rest[0] != '$' {
			return ""
		}
		n, err := frameLen(rest)
		if err != nil || n == 0 {
			return ""
		}
		bulk := rest[:n]
		start := bytes.IndexByte(bulk, '\n') + 1
		return string(bytes.ToUpper(bulk[start : n-2]))
	}
	fields := bytes.Fields(frame)
	if len(fields) == 0 {
		return ""
	}
	return string(bytes.ToUpper(fields[0]))
}

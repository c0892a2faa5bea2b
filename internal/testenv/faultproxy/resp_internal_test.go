package faultproxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A copy must be a whole command however the client's bytes were cut: the
// same stream, fed in chunks of every size, yields the same frames.
func TestFramesAcrossChunks(t *testing.T) {
	stream := "*3\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n0\r\n" +
		"*2\r\n$4\r\nECHO\r\n$-1\r\n" +
		"PING\r\n" +
		"\n" + // a replica's keep-alive, on a link the proxy carries too
		"*1\r\n$4\r\nLONG\r\n" +
		"%1\r\n+k\r\n*2\r\n:1\r\n_\r\n" + // a RESP3 map, as replies carry
		"|1\r\n+ttl\r\n:3\r\n$2\r\nhi\r\n" // an attribute and the value it annotates
	want := []string{
		"*3\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n0\r\n",
		"*2\r\n$4\r\nECHO\r\n$-1\r\n",
		"PING\r\n",
		"\n",
		"*1\r\n$4\r\nLONG\r\n",
		"%1\r\n+k\r\n*2\r\n:1\r\n_\r\n",
		"|1\r\n+ttl\r\n:3\r\n$2\r\nhi\r\n",
	}
	for size := 1; size <= len(stream); size++ {
		var f frames
		var got []string
		for i := 0; i < len(stream); i += size {
			for _, fr := range f.add([]byte(stream[i:min(i+size, len(stream))])) {
				got = append(got, string(fr))
			}
		}
		assert.Equal(t, want, got, "chunks of %d bytes", size)
		assert.Empty(t, f.pending)
	}
}

func TestFramesStopOnGarbage(t *testing.T) {
	var f frames
	assert.Empty(t, f.add([]byte("*x\r\n")))
	assert.True(t, f.broken)
	assert.Empty(t, f.add([]byte("PING\r\n")), "a stream that lost its framing is never copied from again")
}

func TestCommandName(t *testing.T) {
	for frame, want := range map[string]string{
		"*2\r\n$5\r\nhello\r\n$1\r\n3\r\n": "HELLO",
		"*1\r\n$4\r\nPING\r\n":             "PING",
		"ping\r\n":                         "PING",
		"*0\r\n":                           "",
		"\r\n":                             "",
	} {
		assert.Equal(t, want, commandName([]byte(frame)), "%q", frame)
	}
}

package fence

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Token
	}{{"1", 1}, {"41", 41}, {"1732867200000000", 1732867200000000}, {"9223372036854775807", 1<<63 - 1}} {
		got, err := Parse(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got)
		assert.Equal(t, tc.in, got.String(), "canonical form round-trips")
	}
	for _, bad := range []string{"", "0", "00", "041", "-1", "+41", " 41", "41 ", "4 1", "41\n", "0x29", "4.1", "1e3",
		"abc", "41,42", "9223372036854775808", "99999999999999999999", "٤١"} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, ErrMalformed, "%q", bad)
	}
}

func TestContext(t *testing.T) {
	_, ok := FromContext(context.Background())
	assert.False(t, ok)
	got, ok := FromContext(NewContext(context.Background(), 7))
	assert.True(t, ok)
	assert.Equal(t, Token(7), got)
}

// FuzzParse: the parser accepts exactly the canonical decimal form of a
// positive int64, and what it accepts formats back to the same string.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"41", "0", "-1", "+1", " 1", "9223372036854775807", "9223372036854775808", "01", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Parse(s)
		n, perr := strconv.ParseInt(s, 10, 64)
		canonical := perr == nil && n > 0 && strconv.FormatInt(n, 10) == s
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			require.False(t, canonical, "rejected the canonical %q", s)
			return
		}
		require.True(t, canonical, "accepted the non-canonical %q", s)
		require.Equal(t, s, tok.String())
	})
}

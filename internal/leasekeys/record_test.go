package leasekeys

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRecord(t *testing.T) {
	for text, want := range map[string]error{
		"": nil, "17": nil, "0": nil, "/a+b!c~d~e": nil, "9007199254740991~a": nil,
		"9007199254740992": ErrUnreadable, "012": ErrUnreadable, "0x10": ErrUnreadable,
		"1e3": ErrUnreadable, " 12": ErrUnreadable, "12abc": ErrUnreadable, //nolint:gocritic // a leading space is a case
		"17//": ErrBadLists, "17/a+a": ErrBadLists, "17~a~a": ErrBadLists, "17~a/b": ErrBadLists,
	} {
		r, err := ParseRecord(text)
		require.ErrorIs(t, err, want, "%q", text)
		if err == nil {
			assert.Equal(t, text, r.String(), "%q is written as it was read", text)
		}
	}
	r, err := ParseRecord("17/a+b!c~d~a")
	require.NoError(t, err)
	assert.Equal(t, Record{Fence: 17, Minted: true, Ended: []Bar{{Unheld, "a"}, {Released, "b"}, {Forced, "c"}}, Contended: []string{"d", "a"}}, r)
	assert.Equal(t, byte(Forced), r.EndMark("c"))
	assert.Zero(t, r.EndMark("d"))
	assert.True(t, r.Barred("d"))
	assert.False(t, r.Barred("e"))
}

func TestBar(t *testing.T) {
	var r Record
	for i := range MaxBars + 1 {
		assert.Equal(t, byte(Released), r.Bar(strconv.Itoa(i), Released))
		assert.Zero(t, r.Bar(strconv.Itoa(i), Contended))
	}
	assert.Len(t, r.Ended, MaxBars, "the oldest end is pushed out")
	assert.Len(t, r.Contended, MaxBars)
	assert.False(t, r.Barred("0"))
	assert.Equal(t, byte(Released), r.Bar("5", Forced), "an end keeps its first mark")
	assert.Equal(t, Bar{Released, "5"}, r.Ended[0], "and moves to the front")
	assert.Len(t, r.Ended, MaxBars)
}

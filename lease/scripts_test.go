package lease

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/script"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// attemptOf is an attempt of owner on key as Acquire builds one: no wait,
// no ghosts.
func attemptOf(set *settings, key, owner string) acquireArgs {
	return acquireArgs{keys: keysOf(set.Namespace, key), owner: owner, ttl: set.ttlArg, retention: set.retentionArg}
}

// recordProbe runs record.lua's functions on the record at KEYS[1] for
// owner ARGV[1]: what it reads (its fence, owner's end mark, whether owner
// is barred; -1 when it refuses the record), then what barring owner with
// the mark ARGV[2] answers and leaves.
var recordProbe = script.New(recordSrc + `
local key, owner, mark = KEYS[1], ARGV[1], ARGV[2]
local fence, ended, cont = parse(redis.call('GET', key))
if not ended then
  return {-1}
end
local digits = fence and string.format('%d', fence) or ''
local read = {digits, select(2, find(ended, '[/+!]', owner)) or '', isBarred(ended, cont, owner) and 1 or 0}
local got = barOwner(key, owner, '60000', mark) or ''
return {read[1], read[2], read[3], got, redis.call('GET', key)}
`)

// FuzzRecord holds record.lua to its reference, leasekeys.Record: for any
// text that record.lua reads as lockwatch writes it (leasekeys.ErrBadLists
// aside), the same fence, the same answers for owner, and after a bar the
// same answer and the same text; a text one refuses, the other refuses.
// Its seeds run with every go test; go test -fuzz FuzzRecord ./lease/
// looks further.
func FuzzRecord(f *testing.F) {
	// Both lists full: OWNER last on the ended list, first on the other.
	full := "17"
	for i := 1; i < leasekeys.MaxBars; i++ {
		full += "/E" + strconv.Itoa(i)
	}
	full += "+OWNER~OWNER"
	for i := 1; i < leasekeys.MaxBars; i++ {
		full += "~C" + strconv.Itoa(i)
	}
	for _, seed := range []struct {
		text, owner string
		mark        byte
	}{
		{"", "OWNER", '/'}, {"17", "OWNER", '~'}, {"17/OWNER", "OWNER", '+'},
		{"17+OWNER~OWNER", "OWNER", '!'}, {"17!OWNER", "OWNER", '/'},
		{"0/A+B!C~D~E", "B", '~'}, {"/A~B", "A", '~'}, {full, "OWNER", '/'},
		{full, "C15", '~'}, {full, "NEW", '~'}, {full, "NEW", '!'},
		{"17/OWNERX", "OWNER", '+'}, {"17/XOWNER", "OWNER", '/'},
		{"9007199254740991", "O", '/'}, {"9007199254740992", "O", '/'},
		{"0x10", "O", '/'}, {"1e3", "O", '/'}, {"012", "O", '/'}, {"12abc", "O", '/'},
		{"17//", "O", '/'}, {"17/A/A", "A", '+'}, {"17~A/B", "B", '/'}, {"17~A~A", "A", '~'},
	} {
		f.Add(seed.text, seed.owner, seed.mark)
	}
	srv := redistest.Start(f)
	c := srv.Client(f)
	f.Fuzz(func(t *testing.T, text, owner string, mark byte) {
		if owner == "" || strings.ContainsAny(owner, "/+!~") {
			t.Skip("not an owner token: crypto/rand's Text has no mark")
		}
		mark = "/+!~"[mark%4]
		ctx := t.Context()
		require.NoError(t, c.Set(ctx, "record", text, 0).Err())
		got, err := script.RunOne(ctx, c, recordProbe.Call(1, "record", owner, string(mark))).Slice()
		require.NoError(t, err)
		rec, err := leasekeys.ParseRecord(text)
		if err == leasekeys.ErrUnreadable {
			assert.Equal(t, []any{int64(-1)}, got, "record.lua reads %q", text)
			return
		}
		require.Len(t, got, 5, "record.lua refuses %q", text)
		fence := ""
		if rec.Minted {
			fence = strconv.FormatInt(rec.Fence, 10)
		}
		assert.Equal(t, fence, got[0], "the fence of %q", text)
		if err != nil {
			return // ErrBadLists: record.lua's answers are its own
		}
		ended := ""
		if m := rec.EndMark(owner); m != 0 {
			ended = string(m)
		}
		barred := int64(0)
		if rec.Barred(owner) {
			barred = 1
		}
		want := []any{fence, ended, barred, "", ""}
		if m := rec.Bar(owner, mark); m != 0 {
			want[3] = string(m)
		}
		want[4] = rec.String()
		assert.Equal(t, want, got, "%q, owner %q, bar %c", text, owner, mark)
	})
}

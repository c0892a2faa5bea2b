package leasekeys

import (
	"errors"
	"strconv"
	"strings"
)

// Record is a lease's fence record, the value under Keys.Fence: the
// newest fence minted for the key, and the owner tokens of attempts that
// must never take the key, each list newest first and at most MaxBars
// long. Its text is "<fence>", then the ended list, then the contended
// one; the attempts answered contended are apart because every poll of a
// waiter adds one, and would otherwise push a release's bar out within
// milliseconds. An owner is on each list at most once, the ended one with
// the mark of its first end, so that a re-sent command answers what its
// first copy did.
//
// This is the reference for lease/scripts/record.lua, which works on
// positions in the text instead (splitting and joining the lists was most
// of what a busy key's scripts cost Redis); lease's FuzzRecord holds the
// two together.
type Record struct {
	Fence     int64    // the newest fence minted, when Minted
	Minted    bool     // the text starts with a fence
	Ended     []Bar    // the attempts that ended, newest first
	Contended []string // the attempts answered contended, newest first
}

// Bar is an ended attempt: its owner token and how it ended.
type Bar struct {
	Mark  byte
	Owner string
}

// The marks. An owner token never holds one: it is crypto/rand's Text.
const (
	Unheld    = '/' // ended without deleting the lock (expired, or never ran)
	Released  = '+' // its release, or its clean-up, deleted the lock
	Forced    = '!' // an administrator took the lock from it
	Contended = '~' // answered contended
)

// MaxBars is the most owner tokens each list keeps.
const MaxBars = 16

// MaxFence is the largest fence, 2^53 - 1: exact in a Lua double, in JSON
// and in JavaScript. A larger one could not be incremented exactly.
const MaxFence = 1<<53 - 1

var (
	// ErrUnreadable is a text that no version of lockwatch writes and
	// record.lua refuses: a fence in hex, with an exponent, leading zeros
	// or at least 2^53, or something other than a mark after it.
	ErrUnreadable = errors.New("leasekeys: not a fence record")
	// ErrBadLists is a text with a fence record.lua reads, and lists
	// lockwatch cannot have written (an empty owner, one twice on a list,
	// a mark of the ended list after the contended one): record.lua's
	// answers on it are its own, outside this reference.
	ErrBadLists = errors.New("leasekeys: fence record lists lockwatch cannot have written")
)

const marks = "/+!~"

// ParseRecord reads a record's text. With ErrBadLists, the record holds
// its fence.
func ParseRecord(text string) (Record, error) {
	var r Record
	n := strings.IndexFunc(text, func(c rune) bool { return c < '0' || c > '9' })
	if n < 0 {
		n = len(text)
	}
	digits, lists := text[:n], text[n:]
	if lists != "" && strings.IndexByte(marks, lists[0]) < 0 {
		return Record{}, ErrUnreadable
	}
	if digits != "" {
		f, err := strconv.ParseInt(digits, 10, 64)
		if len(digits) > 16 || (len(digits) > 1 && digits[0] == '0') || err != nil || f > MaxFence {
			return Record{}, ErrUnreadable
		}
		r.Fence, r.Minted = f, true
	}
	err := r.parseLists(lists)
	return r, err
}

// parseLists reads the marked tokens of lists into r.
func (r *Record) parseLists(lists string) error {
	for lists != "" {
		mark := lists[0]
		n := strings.IndexAny(lists[1:], marks) + 1
		if n == 0 {
			n = len(lists)
		}
		owner := lists[1:n]
		lists = lists[n:]
		switch {
		case owner == "", r.EndMark(owner) != 0 && mark != Contended,
			mark == Contended && r.onContended(owner) >= 0,
			mark != Contended && len(r.Contended) > 0:
			return ErrBadLists
		case mark == Contended:
			r.Contended = append(r.Contended, owner)
		default:
			r.Ended = append(r.Ended, Bar{Mark: mark, Owner: owner})
		}
	}
	return nil
}

// String returns the record's text.
func (r Record) String() string {
	var b strings.Builder
	if r.Minted {
		b.WriteString(strconv.FormatInt(r.Fence, 10))
	}
	for _, e := range r.Ended {
		b.WriteByte(e.Mark)
		b.WriteString(e.Owner)
	}
	for _, o := range r.Contended {
		b.WriteByte(Contended)
		b.WriteString(o)
	}
	return b.String()
}

// EndMark returns the mark owner ended with, 0 when it is not on the ended
// list.
func (r Record) EndMark(owner string) byte {
	for _, e := range r.Ended {
		if e.Owner == owner {
			return e.Mark
		}
	}
	return 0
}

func (r Record) onContended(owner string) int {
	for i, o := range r.Contended {
		if o == owner {
			return i
		}
	}
	return -1
}

// Barred tells whether owner is on either list: an attempt that must not
// take the key.
func (r Record) Barred(owner string) bool {
	return r.EndMark(owner) != 0 || r.onContended(owner) >= 0
}

// Bar puts owner first on the list of mark (Contended, or an end), at most
// MaxBars kept; an owner already there moves to the front, and on the
// ended list keeps its first mark. It returns the owner's mark on the
// ended list, 0 for Contended.
func (r *Record) Bar(owner string, mark byte) byte {
	if mark == Contended {
		if i := r.onContended(owner); i >= 0 {
			r.Contended = append(r.Contended[:i:i], r.Contended[i+1:]...)
		}
		r.Contended = pushFront(r.Contended, owner)
		return 0
	}
	for i, e := range r.Ended {
		if e.Owner == owner {
			mark = e.Mark
			r.Ended = append(r.Ended[:i:i], r.Ended[i+1:]...)
			break
		}
	}
	r.Ended = pushFront(r.Ended, Bar{Mark: mark, Owner: owner})
	return mark
}

func pushFront[T any](list []T, v T) []T {
	return append([]T{v}, list[:min(len(list), MaxBars-1)]...)
}

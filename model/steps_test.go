package model

import (
	"fmt"
	"strconv"
	"strings"
)

// step is one line the model's server printed (lease.pml, "The step lines
// the conformance test replays"): a script it ran with the model's
// arguments and reply, or an event (expiry, restart, failover), and the
// record it predicts afterwards.
type step struct {
	line   string
	kind   string         // acquire, renew, release, force, inspect, expire, restart, evict, failover, write; FIFO's grant, refresh, qexpire
	arg    map[string]int // the line's key=value numbers: t, w, r, f, cp, h, who, id, m
	ghosts []int          // acquire's g=: the Locker's ghosts, oldest first
	state  *record        // after " | ": the key as the model holds it; nil when not printed
}

// record is what the model's primary holds for the key.
type record struct {
	lock  int     // owner token, 0: free
	fence int     // the fence record's fence, 0: none
	ended []bar   // the ended list, newest first
	cont  []int   // the contended list, newest first
	queue []entry // FIFO: the wait queue, oldest first
}

// entry is one token in the wait queue, and whether its entry is live.
type entry struct {
	tok  int
	live bool
}

// bar is one token on the ended list with the mark it ended with.
type bar struct {
	mark byte // '/', '+' or '!'
	tok  int
}

// The model's numbers for the ended list's marks (lease.pml: SLASH, PLUS,
// BANG).
var marks = map[int]byte{1: '/', 2: '+', 3: '!'}

func parseStep(line string) (step, error) {
	s := step{line: line, arg: map[string]int{}}
	left, right, hasState := strings.Cut(line, " | ")
	fields := strings.Fields(left)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "@") {
		return s, fmt.Errorf("not a step: %q", line)
	}
	s.kind = fields[0][1:]
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return s, fmt.Errorf("field %q in %q", f, line)
		}
		if k == "g" {
			ints, err := list(v)
			if err != nil {
				return s, fmt.Errorf("%w in %q", err, line)
			}
			s.ghosts = ints
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return s, fmt.Errorf("field %q in %q: %w", f, line, err)
		}
		s.arg[k] = n
	}
	if hasState {
		rec, err := parseRecord(right)
		if err != nil {
			return s, fmt.Errorf("%w in %q", err, line)
		}
		s.state = &rec
	}
	return s, nil
}

// parseRecord reads "lock=3 fence=5 e=2.1,1.4, c=3," and, in
// FIFO, " q=4.2,6.0," (a token and the ticks its entry has left).
func parseRecord(s string) (record, error) {
	var r record
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "lock", "fence":
			n, err := strconv.Atoi(v)
			if err != nil {
				return r, fmt.Errorf("record field %q: %w", f, err)
			}
			switch k {
			case "lock":
				r.lock = n
			case "fence":
				r.fence = n
			}
		case "e":
			for _, item := range strings.Split(v, ",") {
				if item == "" {
					continue
				}
				m, t, ok := strings.Cut(item, ".")
				mi, err1 := strconv.Atoi(m)
				ti, err2 := strconv.Atoi(t)
				if !ok || err1 != nil || err2 != nil || marks[mi] == 0 {
					return r, fmt.Errorf("ended bar %q", item)
				}
				r.ended = append(r.ended, bar{mark: marks[mi], tok: ti})
			}
		case "c":
			ints, err := list(v)
			if err != nil {
				return r, err
			}
			r.cont = ints
		case "q":
			q, err := parseQueue(v)
			if err != nil {
				return r, err
			}
			r.queue = q
		default:
			return r, fmt.Errorf("record field %q", f)
		}
	}
	return r, nil
}

// parseQueue reads "4.2,6.0," into the queue's entries: live while their
// ticks are not 0.
func parseQueue(v string) ([]entry, error) {
	var q []entry
	for _, item := range strings.Split(v, ",") {
		if item == "" {
			continue
		}
		t, x, ok := strings.Cut(item, ".")
		ti, err1 := strconv.Atoi(t)
		xi, err2 := strconv.Atoi(x)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("queue entry %q", item)
		}
		q = append(q, entry{tok: ti, live: xi > 0})
	}
	return q, nil
}

// list reads "3,4," into its non-zero numbers.
func list(v string) ([]int, error) {
	var out []int
	for _, item := range strings.Split(v, ",") {
		if item == "" {
			continue
		}
		n, err := strconv.Atoi(item)
		if err != nil {
			return nil, fmt.Errorf("list item %q: %w", item, err)
		}
		if n != 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

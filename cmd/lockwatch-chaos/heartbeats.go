package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// heartbeats collects what the run holders' programs, and what they left
// behind, wrote while they worked: for each process and fence, its first
// and last heartbeat. A program works from its first heartbeat to the
// last one of any process with its fence; two programs of one key
// working at once is an overlap like two live leases (check 5), and a
// heartbeat after its lockwatch run exited is work without a lease.
type heartbeats struct {
	mu     sync.Mutex
	spans  map[spanID]*span
	starts map[runID][]beat // the first heartbeat of each program a run (or campaign) ran
	total  int
}

type spanID struct {
	holder string
	fence  int64
	pid    int
}

// span is one process's heartbeats with one fence.
type span struct {
	key, role   string
	first, last int64
	n           int
}

// workID names one program's work: its holder and its fence.
type workID struct {
	holder string
	fence  int64
}

// runID names one lockwatch run of a run holder: its Seq.
type runID struct {
	holder string
	seq    int
}

func newHeartbeats() *heartbeats {
	return &heartbeats{spans: map[spanID]*span{}, starts: map[runID][]beat{}}
}

// read takes the heartbeats of one run holder's pipe until it closes, and
// hands each program's first one to started.
func (hb *heartbeats) read(r io.Reader, started func(beat)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var b beat
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			continue
		}
		hb.add(b)
		if b.Start {
			started(b)
		}
	}
}

func (hb *heartbeats) add(b beat) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.total++
	id := spanID{b.Holder, b.Fence, b.Pid}
	s, ok := hb.spans[id]
	if !ok {
		s = &span{key: b.Key, role: b.Role, first: b.At}
		hb.spans[id] = s
	}
	s.first, s.last = min(s.first, b.At), max(s.last, b.At)
	s.n++
	if b.Start {
		id := runID{b.Holder, b.Seq}
		hb.starts[id] = append(hb.starts[id], b)
	}
}

// start returns the first heartbeat of run seq of holder, if its program
// started.
func (hb *heartbeats) start(holder string, seq int) (beat, bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	bs := hb.starts[runID{holder, seq}]
	if len(bs) == 0 {
		return beat{}, false
	}
	return bs[0], true
}

// startsOf returns the first heartbeats of every program that run seq of
// holder ran: one for a lockwatch run, one per term for a lockwatch elect.
func (hb *heartbeats) startsOf(holder string, seq int) []beat {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return slices.Clone(hb.starts[runID{holder, seq}])
}

// work is each program's work as a lease record for the overlap check:
// from its first heartbeat to the last of every process with its fence,
// the unsupervised ones left out.
func (hb *heartbeats) work() []leaseRec {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	byFence := map[workID]*leaseRec{}
	for id, s := range hb.spans {
		if s.role == roleUnsupervised {
			continue
		}
		w := workID{id.holder, id.fence}
		r, ok := byFence[w]
		if !ok {
			r = &leaseRec{Holder: id.holder, Key: s.key, Fence: id.fence, Acquired: s.first, Run: true}
			byFence[w] = r
		}
		r.Acquired = min(r.Acquired, s.first)
		r.Done = max(r.Done, s.last)
	}
	out := make([]leaseRec, 0, len(byFence))
	for _, r := range byFence {
		r.End, r.Released = r.Done, r.Done
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b leaseRec) int { return cmp.Compare(a.Acquired, b.Acquired) })
	return out
}

// after lists the processes that heartbeated with a fence after the
// moment limits gives for it (what says what happened then), the
// unsupervised ones left out: after the lockwatch run that held it had
// exited, after its key expired in Redis.
func (hb *heartbeats) after(limits map[workID]int64, what string) []string {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	var bad []string
	for id, s := range hb.spans {
		at, ok := limits[workID{id.holder, id.fence}]
		if !ok || s.role == roleUnsupervised || s.last <= at {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s's %s (pid %d) heartbeated on %s with fence %d %v after %s",
			id.holder, s.role, id.pid, s.key, id.fence, time.Duration(s.last-at).Round(time.Microsecond), what))
	}
	slices.Sort(bad)
	return bad
}

// counts returns the number of heartbeats, and of those the unsupervised
// processes wrote (left out of the checks).
func (hb *heartbeats) counts() (total, unsupervised int) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for _, s := range hb.spans {
		if s.role == roleUnsupervised {
			unsupervised += s.n
		}
	}
	return hb.total, unsupervised
}

// pids are the processes that heartbeated.
func (hb *heartbeats) pids() []int {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	var out []int
	for id := range hb.spans {
		if !slices.Contains(out, id.pid) {
			out = append(out, id.pid)
		}
	}
	slices.Sort(out)
	return out
}

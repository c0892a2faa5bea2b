package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"golang.org/x/sys/unix"
)

// now is CLOCK_MONOTONIC in nanoseconds. On Linux it is one clock for the
// whole machine, so the times recorded by the child processes and by this
// one can be compared directly: linearizability is about real-time order
// across all clients, not within one process.
func now() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Operation kinds and outcomes, as recorded.
const (
	kindAcquire = "acquire"
	kindWrite   = "write"
	kindRead    = "read"

	outAcquired  = "acquired"
	outContended = "contended"
	outUnknown   = "unknown" // an acquire or a write whose effect is not known
	outError     = "error"   // an acquire that failed; a read not answered; a guarded write refused busy, never admitted
	outOK        = "ok"      // a write accepted, a read answered
	outStale     = "stale"   // a write rejected by the fence
)

// Registers: every lock key has one in each store, and one behind the
// parent's Guard (guarded.go).
const (
	regRedis = "redis"
	regPG    = "pg"
	regGuard = "guard"
)

// op is one operation in the history.
type op struct {
	Holder  string        `json:"h"`
	Proc    int           `json:"p"` // 0: this process; n: child process n
	Kind    string        `json:"k"`
	Key     string        `json:"key"`
	Reg     string        `json:"reg,omitempty"`
	Fence   int64         `json:"f,omitempty"` // the token acquired, or written with
	Token   fence.Token   `json:"-"`           // a write's token, whole (its scope and signature are not history)
	Value   string        `json:"v,omitempty"` // the value written or read
	Mark    int64         `json:"m,omitempty"` // a read's mark; a rejected write's high-water mark
	Exact   bool          `json:"x,omitempty"` // Mark of a rejected write was read in the same atomic step
	Invoke  int64         `json:"i"`
	Return  int64         `json:"r"`
	Outcome string        `json:"o"`
	Err     string        `json:"err,omitempty"`  // why an acquire was unknown or failed
	Wait    time.Duration `json:"wait,omitempty"` // an acquire's lease.Config.Wait; 0 for fail fast
	Via     string        `json:"via,omitempty"`  // a guarded write's entry point (guardEntryPoints)
	Slow    time.Duration `json:"slow,omitempty"` // how long a guarded write held back the rest of its value
	// Permit marks a permit holder's acquire (permitholders.go): its Key
	// is the permit's, or the semaphore's when none was taken.
	Permit bool `json:"permit,omitempty"`
	// Shared marks a shared lease holder's acquire (sharedholders.go):
	// roleReader or roleWriter.
	Shared string `json:"shared,omitempty"`
	// Unagreed marks a shared lease acquire that failed before its Shared
	// had agreed the key's limit with Redis: that step's error is the
	// Shared's, which lockwatch_permits_acquires does not count.
	Unagreed bool `json:"ua,omitempty"`
}

// leaseRec is what one holder saw of one lease, from acquire to release.
type leaseRec struct {
	Holder   string `json:"h"`
	Proc     int    `json:"p"`
	Key      string `json:"key"`
	Fence    int64  `json:"f"`
	Acquired int64  `json:"a"`            // return of the acquire
	Cancel   int64  `json:"c,omitempty"`  // when the holder learnt of the loss (context cancelled, or Err); 0 if never
	Commit   int64  `json:"cs,omitempty"` // when the final write (Commit's fn) started; 0 if it did not run
	// Reads is when the register reads before the work returned: a read
	// blocked on a connection a fault left stale does not end with its
	// context (go-redis bounds a socket read by a deadline, not by a
	// cancellation), so late work counts from the later of it and Cancel.
	Reads   int64  `json:"rd,omitempty"`
	End     int64  `json:"e"` // when the protected work, Commit included, returned
	Lost    bool   `json:"lost,omitempty"`
	Reason  string `json:"why,omitempty"`    // the loss's lease.LossReason
	Late    bool   `json:"late,omitempty"`   // the final write ran to its end after the loss
	Paused  bool   `json:"paused,omitempty"` // stopped on purpose inside its Commit, for a TTL or more
	Refused bool   `json:"refused,omitempty"`
	// The live interval, for the overlap check: from Acquired to the first
	// of Done (the context's Done closed) and Released (Release was called).
	Done     int64 `json:"d"`
	Released int64 `json:"rl"`
	ErrAt    int64 `json:"err_at,omitempty"` // when Err first reported the loss; 0 if it did not before Done
	// Run marks a lockwatch run program's work (heartbeats.go): Acquired
	// is its first heartbeat, Done the last of any process with its fence.
	Run bool `json:"run,omitempty"`
	// Term marks an election term (elections.go): Acquired is when its
	// leader's function started, Released when it returned.
	Term bool `json:"term,omitempty"`
	// Permit marks a permit of the semaphore (permitholders.go): Key is
	// the permit's, "<key>#<index>".
	Permit bool `json:"permit,omitempty"`
	// Shared marks a shared lease's reader (Key the permit's, "<key>#<i>")
	// or writer (Key the key): roleReader or roleWriter.
	Shared string `json:"shared,omitempty"`
	// Taken is when a shared lease's writer began taking its leases (its
	// Write's invoke): it holds the key's lease and permits from before
	// Acquired, and a loss of them in Redis meanwhile explains an overlap.
	Taken int64 `json:"tk,omitempty"`
}

// liveUntil is the end of the lease's live interval: its work had stopped
// by then, or been told to.
func (r leaseRec) liveUntil() int64 { return min(r.Done, r.Released) }

// recorder receives the history. In the parent it is the history itself; in
// a child it forwards every record to the parent.
type recorder interface {
	op(op)
	lease(leaseRec)
	term(termRec)
}

// history is the parent's record of every process's operations.
type history struct {
	mu     sync.Mutex
	ops    []op
	leases []leaseRec
	terms  []termRec

	// Running totals for the progress line.
	nOps, acquired, lost, unknown, rejected atomic.Int64
}

func (h *history) op(o op) {
	h.mu.Lock()
	h.ops = append(h.ops, o)
	h.mu.Unlock()
	h.nOps.Add(1)
	switch {
	case o.Kind == kindAcquire && o.Outcome == outAcquired:
		h.acquired.Add(1)
	case o.Kind == kindAcquire && o.Outcome == outUnknown:
		h.unknown.Add(1)
	case o.Kind == kindWrite && o.Outcome == outStale:
		h.rejected.Add(1)
	}
}

func (h *history) lease(r leaseRec) {
	h.mu.Lock()
	h.leases = append(h.leases, r)
	h.mu.Unlock()
	if r.Lost {
		h.lost.Add(1)
	}
}

func (h *history) term(t termRec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.terms = append(h.terms, t)
}

// termsOf returns the terms recorded so far.
func (h *history) termsOf() []termRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]termRec(nil), h.terms...)
}

func (h *history) snapshot() ([]op, []leaseRec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...), append([]leaseRec(nil), h.leases...)
}

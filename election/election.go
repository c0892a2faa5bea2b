package election

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leaseslot"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

var (
	// ErrNoLeader: Observe found the election's key free, between two terms or
	// before the first.
	ErrNoLeader = errors.New("election: no leader")
	// ErrResigned: the term ended because the leader's function returned while
	// its term was live. Run resigns and returns the function's error.
	ErrResigned = errors.New("election: resigned")
	// ErrLateCompletion: the leader's function returned after its term's key
	// may have passed to another candidate (the package doc says how that is
	// told). Its writes may overlap the next term's: only the resource's fence
	// stops them.
	ErrLateCompletion = errors.New("election: late completion")
)

// Term is one candidate's spell as leader: one lease on the election's key.
type Term struct {
	// Fence is the term's number, the lease's fence: strictly greater than
	// every earlier term's of the key, across restarts and failovers as the
	// lease's fence is (RELIABILITY.md).
	Fence int64
	// Token is the term's fencing token, for the resource the leader writes to
	// (lease.Lease.Token): it refuses older terms' writes.
	Token fence.Token
	// Identity is the leader's Config.Identity.
	Identity string
	// Start is when this candidate learnt that it leads.
	Start time.Time
}

// Election is one candidate for one key: Run campaigns and leads, Observe
// tells who leads. Its methods are safe for concurrent use; one Run at a
// time.
type Election struct {
	lk     *lease.Locker // lk.With a Wait that only the context ends
	client redis.UniversalClient
	key    string
	cfg    Config
	rec    *obs.Recorder // the Locker's Telemetry's
	record string        // the leader record's Redis key
	// recordTTL is the leader record's expiry; a leader rewrites it every half
	// of it.
	recordTTL time.Duration

	running atomic.Bool
	mu      sync.Mutex
	leading *termState // the live term, nil between terms
	since   time.Time  // when the live term started, or the last ended
	last    int64      // the newest term's fence, 0 before the first
}

// recordTTL outlives every term but the longest, which rewrite it, and lets
// an abandoned election's record go within a day.
const recordTTL = 24 * time.Hour

// New returns a candidate for key, whose terms are leases of lk (any
// Locker: New derives one that waits for the key as long as Run's context
// lives, sharing lk's scheduler). The leader writes its record through
// lk's client, in the lease's namespace and hash slot, and the election
// records where lk does, as a permits.Semaphore does: one Locker carries
// the client, namespace and Telemetry. New neither campaigns nor sends
// anything.
func New(lk *lease.Locker, key string, cfg Config) (*Election, error) {
	switch {
	case lk == nil:
		return nil, invalidf("nil Locker")
	case key == "":
		return nil, invalidf("empty key")
	}
	cfg = cfg.withDefaults(key)
	if err := validIdentity(cfg.Identity); err != nil {
		return nil, err
	}
	waiting, err := lk.With(lease.Config{Wait: math.MaxInt64, Name: cfg.Name})
	if err != nil {
		return nil, err
	}
	return &Election{
		lk: waiting, client: leaseslot.Client(lk), key: key, cfg: cfg,
		record:    recordKey(leaseslot.Namespace(lk), key),
		recordTTL: recordTTL,
		rec:       obs.RecorderOf(leaseslot.Telemetry(lk)),
	}, nil
}

// Leading returns the term this candidate leads, while its lease is active
// and its function runs: what a health check or a scheduler that asks "am I
// the leader?" reads. Between terms, and from a term's loss on, it reports
// false.
func (e *Election) Leading() (Term, bool) {
	e.mu.Lock()
	ts := e.leading
	e.mu.Unlock()
	if ts == nil || ts.l.Err() != nil {
		return Term{}, false
	}
	return ts.term, true
}

// campaign is the candidate's state for the process's list of elections
// (debugpage).
func (e *Election) campaign() obs.Campaign {
	t, leading := e.Leading()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !leading {
		t.Fence = e.last
	}
	return obs.Campaign{Election: e.cfg.Name, Identity: e.cfg.Identity, Leading: leading, Term: t.Fence, Since: e.since}
}

// Ready answers 200 while this candidate leads (Leading) and 503
// otherwise, its body the term or "not leading": the health check for
// "serve only on the leader". As a Kubernetes readiness probe it keeps the
// standbys out of their Services' endpoints without restarting them, and
// takes the leader out from its term's loss on; never as a liveness probe,
// which would restart every standby. Endpoints follow the probe's period,
// so a request may still reach a deposed leader: the fence refuses its
// writes.
func (e *Election) Ready(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	t, ok := e.Leading()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "not leading\n")
		return
	}
	_, _ = io.WriteString(w, "leading term "+strconv.FormatInt(t.Fence, 10)+"\n")
}

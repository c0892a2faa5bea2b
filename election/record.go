package election

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/script"
	"github.com/lockwatch/lockwatch/lease"
)

// Leader is who leads an election, as Observe read it.
type Leader struct {
	// Term is the leading term's fence (Term.Fence).
	Term int64
	// Identity is the leader's Config.Identity, "" when unknown: the leader
	// has not written its record yet, or the record is another term's or gone.
	Identity string
}

// The lease scripts keep owner tokens, not names, so the leader keeps a
// record of its own, "<fence> <until> <identity>", at <namespace>:{<h>}:n:
// the lease's hash tag puts it in the lease's slot, and ~<namespace>:{*,
// the ACL pattern of a Locker's user, covers it. until (ms, Redis clock) is
// when the term was last known to end: its validity at the leader's last
// write, or the term's end once it ended; the next leader measures the time
// without a leader from it.

//go:embed record.lua
var recordSrc string

var writeRecord = script.New(recordSrc)

// recordKey returns the name of key's leader record in namespace.
func recordKey(namespace, key string) string {
	lock := leasekeys.Of(namespace, key).Lock
	return lock[:len(lock)-1] + "n"
}

// Observe reads who leads: the term holding the election's key and its
// leader's identity, or ErrNoLeader when the key is free. Two reads
// (Locker.Inspect, then the record), each bounded by ctx: the identity is
// given only when the record names the term Inspect found, so a record left
// by an earlier term never names the wrong leader. When the record cannot
// be read, the Leader holds the term and the error says why the identity is
// missing. The owner token never leaves Redis.
func (e *Election) Observe(ctx context.Context) (Leader, error) {
	info, err := e.lk.Inspect(ctx, e.key)
	if err != nil {
		return Leader{}, err
	}
	if !info.Held {
		return Leader{}, ErrNoLeader
	}
	l := Leader{Term: info.Fence}
	v, err := e.client.Get(ctx, e.record).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return l, nil
	case err != nil:
		return l, fmt.Errorf("election: reading the leader record: %w", err)
	}
	term, rest, _ := strings.Cut(v, " ")
	if _, id, ok := strings.Cut(rest, " "); ok && term == strconv.FormatInt(info.Fence, 10) {
		l.Identity = id
	}
	return l, nil
}

// write writes t's leader record, bounded by ctx: the term is valid for
// valid from now (0: it ended). On the term's first write it returns the
// time without a leader since the previous term's until, negative when the
// record held no earlier term or was not written.
func (e *Election) write(ctx context.Context, t Term, valid time.Duration) (time.Duration, error) {
	call := writeRecord.Call(1, e.record, t.Fence, t.Identity, e.recordTTL.Milliseconds(), valid.Milliseconds())
	res, err := script.RunOne(ctx, e.client, call).Int64Slice()
	if err != nil || len(res) != 2 || res[1] < 0 {
		return -1, err
	}
	return time.Duration(res[1]) * time.Millisecond, nil
}

// Rewrites of a term's record: a third of the term's validity, so that its
// until lags the lease's by at most that much, within these bounds.
const (
	minRewrite = 10 * time.Millisecond
	maxRewrite = recordTTL / 2
)

// keepRecord writes t's record while l is held: at once, bounded by the
// term's validity, and then every third of it, so that the record's until
// follows the lease's renewals and a term longer than the record's expiry
// keeps its name. It returns the first write's time without a leader, and
// stop, which ends the rewrites and returns once none runs.
func (e *Election) keepRecord(l *lease.Lease, t Term) (time.Duration, func()) {
	valid := l.Remaining()
	wctx, cancel := context.WithTimeout(l.Context(), valid)
	gap, _ := e.write(wctx, t, valid) // a record not written leaves the identity unknown
	cancel()
	every := min(max(valid/3, minRewrite), e.recordTTL/2, maxRewrite)
	ctx, cancel := context.WithCancel(l.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// A deadline, not the lease's cancellation alone, bounds
				// a socket read (lease.NewLocker's doc).
				wctx, cancel := context.WithTimeout(ctx, every)
				_, _ = e.write(wctx, t, l.Remaining())
				cancel()
			}
		}
	}()
	return gap, func() { cancel(); <-done }
}

// endRecord marks t's record ended now, for the next leader's time without
// a leader; bounded by bound, detached from ctx's end. A later term's
// record is left as it is.
func (e *Election) endRecord(ctx context.Context, t Term, bound time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	_, _ = e.write(ctx, t, 0)
}

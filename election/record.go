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
// record of its own, "<fence> <identity>", at <namespace>:{<h>}:n: the
// lease's hash tag puts it in the lease's slot, and ~<namespace>:{*, the
// ACL pattern of a Locker's user, covers it.

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
	if info.KeyHash != leasekeys.HashTag(e.record) {
		return Leader{}, e.namespaceError()
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
	if term, id, ok := strings.Cut(v, " "); ok && term == strconv.FormatInt(info.Fence, 10) {
		l.Identity = id
	}
	return l, nil
}

func (e *Election) namespaceError() error {
	return invalidf("namespace %q is not the Locker's lease.Config.Namespace", e.cfg.Namespace)
}

// write writes t's leader record, bounded by ctx.
func (e *Election) write(ctx context.Context, t Term) error {
	value := strconv.FormatInt(t.Fence, 10) + " " + t.Identity
	call := writeRecord.Call(1, e.record, t.Fence, value, e.recordTTL.Milliseconds())
	return script.RunOne(ctx, e.client, call).Err()
}

// keepRecord writes t's record while ctx lives: at once, bounded by the
// term's validity, and then every half of its expiry, so that a term longer
// than the expiry keeps its name. The returned stop ends the rewrites and
// returns once none runs.
func (e *Election) keepRecord(ctx context.Context, t Term, valid time.Duration) (stop func()) {
	wctx, cancel := context.WithTimeout(ctx, valid)
	_ = e.write(wctx, t) // a record not written leaves the identity unknown
	cancel()
	ctx, cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(e.recordTTL / 2)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = e.write(ctx, t)
			}
		}
	}()
	return func() { cancel(); <-done }
}

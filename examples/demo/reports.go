package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// reports is the gRPC Reports service of a replica. Both methods run under
// the lease on report:{account} (the interceptors hold it), bounded by the
// max hold, and end by writing the report's entry to the ledger through
// Commit.
type reports struct {
	r *replica
}

func (s *reports) Generate(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	text, err := s.generate(ctx, in.GetValue(), nil)
	if err != nil {
		return nil, err
	}
	return wrapperspb.String(text), nil
}

func (s *reports) Stream(in *wrapperspb.StringValue, stream grpc.ServerStreamingServer[wrapperspb.StringValue]) error {
	ctx := stream.Context() // the lease's context: the interceptor replaced it
	text, err := s.generate(ctx, in.GetValue(), func(page string) error { return stream.Send(wrapperspb.String(page)) })
	if err != nil {
		return err
	}
	return stream.Send(wrapperspb.String(text))
}

// How a report handler behaves, drawn per call when its fault is on.
type reportMode int

const (
	reportNormal reportMode = iota
	reportNearExpiry
	reportTooLate
	reportOverrun
)

func (s *reports) mode() reportMode {
	f := s.r.d.cfg.faults
	if f.on(faultOverrun) && s.r.d.overrunArmed.CompareAndSwap(true, false) {
		return reportOverrun
	}
	if f.on(faultNearExpiry) {
		return reportMode(s.r.d.expiryArmed.Swap(int32(reportNormal)))
	}
	return reportNormal
}

// generate builds the report of account, sending progress pages through
// send (nil for the unary call), and writes its ledger entry.
func (s *reports) generate(ctx context.Context, account string, send func(string) error) (string, error) {
	r := s.r
	l := lease.FromContext(ctx)
	ttl := r.d.cfg.ttl
	slow := r.slowCancel()

	mode := s.mode()
	switch mode {
	case reportOverrun:
		// The overrun fault: a handler that ignores its context and runs
		// past the lease's max hold. The lease is lost (max_hold) while it
		// runs; it answers success anyway, and lockwatch counts a late
		// completion. It writes nothing to the ledger, so its result is
		// only the answer it returns: the kind of work no fence can guard.
		start := time.Now()
		r.d.out.event("overrun", "%s: a report on %s ignores its context for %v, past its max hold (%v): watch its loss (max_hold), lockwatch_lease_overrunning, a late completion",
			r.name, account, 2*r.d.maxHold(), r.d.maxHold())
		r.sleep(2 * r.d.maxHold())
		took := time.Since(start).Round(10 * time.Millisecond)
		var lost *lease.LostError
		if errors.As(l.Err(), &lost) {
			r.d.out.event("overrun", "%s answers a report on %s after %v; its lease was lost (%s)",
				r.name, account, took, lost.Reason)
		}
		return fmt.Sprintf("report %s: generated in %v, after its lease ended", account, took), nil
	case reportNearExpiry:
		// Work until the validity left is under Commit's warning threshold:
		// the commit runs and is reported as near_expiry.
		if err := waitRemaining(ctx, l, r.d.commitWarn()*2/3); err != nil {
			return "", statusOf(err)
		}
	case reportTooLate:
		// Work until it is under the hard margin: Commit refuses.
		if err := waitRemaining(ctx, l, r.d.commitHard()/2); err != nil {
			return "", statusOf(err)
		}
	default:
		// Long enough that about half the reports see their lease renewed
		// (every TTL/3): renewals that stalls and lost replies can fail.
		pages, page := 1, jitter(ttl/5, ttl/2)
		if send != nil {
			pages, page = 3, jitter(ttl/15, ttl/6)
		}
		for i := 1; i <= pages; i++ {
			if err := r.work(ctx, page, slow); err != nil {
				return "", statusOf(err)
			}
			if send != nil {
				if err := send(fmt.Sprintf("report %s: page %d of %d", account, i, pages)); err != nil {
					return "", err
				}
			}
		}
	}

	left := l.Remaining()
	err := l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
		return r.d.ledger.put(ctx, "report:"+account, fmt.Sprintf("report@%d", token.Fence))
	})
	r.d.narrateExpiry(r, mode, account, left, err)
	if err != nil {
		return "", statusOf(err)
	}
	return fmt.Sprintf("report %s: written with fence %d, %v of validity left", account, l.Fence(), l.Remaining().Round(time.Millisecond)), nil
}

// narrateExpiry narrates the commit of a report the near-expiry fault
// held back until its lease's validity left, left, was under Commit's
// warning threshold (near expiry) or its hard margin (too late).
func (d *demo) narrateExpiry(r *replica, mode reportMode, account string, left time.Duration, err error) {
	left = left.Round(time.Millisecond)
	switch {
	case mode != reportNearExpiry && mode != reportTooLate:
	case err == nil:
		d.out.event("expiry", "%s commits a report on %s with %v of validity left, under Commit's warning threshold (%v): written; watch commits near_expiry",
			r.name, account, left, d.commitWarn())
	case errors.Is(err, lease.ErrExpiring):
		d.out.event("expiry", "%s: a report on %s with %v of validity left, under Commit's hard margin (%v), is refused, nothing written (LEASE_EXPIRING): watch commits refused",
			r.name, account, left, d.commitHard())
	default:
		d.out.event("expiry", "%s: a report on %s held back to commit with %v of validity left fails: %v", r.name, account, left, err)
	}
}

// waitRemaining works until the lease's validity left is below d. The
// lease is renewed meanwhile, so only the max hold makes it fall that low.
func waitRemaining(ctx context.Context, l *lease.Lease, below time.Duration) error {
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx) // lost meanwhile: stop
		}
		if l.Remaining() < below {
			return nil
		}
		t := time.NewTimer(min(2*time.Millisecond, below/4))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// statusOf maps a handler error to its gRPC status. Commit's refusals
// and the ledger's stale rejection are returned as they are: the
// interceptors answer them with the refusal table's status (UNAVAILABLE
// LEASE_LOST or LEASE_EXPIRING, ABORTED FENCE_STALE) and the lock name.
func statusOf(err error) error {
	switch {
	case errors.Is(err, lease.ErrLost), errors.Is(err, lease.ErrExpiring), errors.Is(err, fence.ErrStale):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Unavailable, err.Error())
}

// accountOf is the unary key function's view of a request.
func accountOf(req any) string {
	if v, ok := req.(*wrapperspb.StringValue); ok {
		return v.GetValue()
	}
	return ""
}

// accountMetadata carries the account of a streaming call: its key
// function runs before the stream's first message is read.
const accountMetadata = "account"

func accountFromMetadata(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(accountMetadata); len(v) == 1 {
		return v[0]
	}
	return ""
}

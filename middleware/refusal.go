package middleware

import (
	"context"
	"errors"
	"net/http"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// refusal is one way the middleware turns a request down, with its answer
// in both protocols: the HTTP problem and the gRPC status are made from
// the same row, so the two cannot drift apart.
type refusal struct {
	reason  string
	status  int        // HTTP
	code    codes.Code // gRPC
	title   string     // the problem's title
	detail  string     // what the client is told: problem detail, status message
	retry   time.Duration
	fromErr bool // the detail is the error's own message (it says what is wrong with the input)
}

// The reasons: the ErrorInfo reason on gRPC (in errorDomain), the "reason"
// member of HTTP problems. The package doc lists them for clients; a test
// holds that list to the rows below.
const (
	errorDomain                 = "lockwatch"
	reasonContended             = "LEASE_CONTENDED"
	reasonUnknown               = "LEASE_UNKNOWN"
	reasonUnavailable           = "LEASE_UNAVAILABLE"
	reasonLost                  = "LEASE_LOST"
	reasonExpiring              = "LEASE_EXPIRING"
	reasonSaturated             = "PERMITS_SATURATED"
	reasonFenceStale            = "FENCE_STALE"
	reasonFenceMalformed        = "FENCE_MALFORMED"
	reasonFenceMissing          = "FENCE_MISSING"
	reasonFenceForeign          = "FENCE_FOREIGN"
	reasonFenceForged           = "FENCE_FORGED"
	reasonFenceAhead            = "FENCE_AHEAD"
	reasonFenceUnscoped         = "FENCE_UNSCOPED"
	reasonFenceBusy             = "FENCE_BUSY"
	reasonFenceStoreUnavailable = "FENCE_STORE_UNAVAILABLE"
)

// The refusals, one row each.
var (
	refuseContended   = refusal{reasonContended, http.StatusConflict, codes.Aborted, "Lease held", "another replica is doing this work", time.Second, false}
	refuseUnknown     = refusal{reasonUnknown, http.StatusServiceUnavailable, codes.Unavailable, "Lease state unknown", "the lock service did not answer in time; the work did not run", time.Second, false}
	refuseUnavailable = refusal{reasonUnavailable, http.StatusServiceUnavailable, codes.Unavailable, "Lease unavailable", "the lock service is unavailable; the work did not run", time.Second, false}
	refuseLost        = refusal{reasonLost, http.StatusServiceUnavailable, codes.Unavailable, "Lease lost", "the lease was lost while the work ran; it may not have completed", time.Second, false}
	refuseExpiring    = refusal{reasonExpiring, http.StatusServiceUnavailable, codes.Unavailable, "Lease about to expire", "the lease had too little validity left to write; nothing was written", time.Second, false}
	refuseSaturated   = refusal{reasonSaturated, http.StatusTooManyRequests, codes.ResourceExhausted, "All permits held", "as many requests as this route allows are running on the replicas; the work did not run", time.Second, false}
	refuseStale       = refusal{reasonFenceStale, http.StatusConflict, codes.Aborted, "Stale fencing token", "a newer lease holder has already written", 0, false}
	refuseMalformed   = refusal{reasonFenceMalformed, http.StatusBadRequest, codes.InvalidArgument, "Malformed fencing token", "", 0, true}
	refuseMissing     = refusal{reasonFenceMissing, http.StatusPreconditionRequired, codes.FailedPrecondition, "Fencing token required", "send the lease's token in the " + tokenHeader + " header (gRPC: " + tokenMetadata + " metadata)", 0, false}
	refuseForeign     = refusal{reasonFenceForeign, http.StatusForbidden, codes.PermissionDenied, "Fencing token of another key", "the token was minted for another lock key than the one this resource checks", 0, false}
	refuseForged      = refusal{reasonFenceForged, http.StatusForbidden, codes.PermissionDenied, "Fencing token not minted by a Locker", "the token is not signed with a secret this resource accepts", 0, false}
	refuseAhead       = refusal{reasonFenceAhead, http.StatusForbidden, codes.PermissionDenied, "Fencing token ahead of the clock", "the token's fence is further ahead of the resource's clock than any Locker mints", 0, false}
	refuseUnscoped    = refusal{reasonFenceUnscoped, http.StatusBadRequest, codes.InvalidArgument, "Plain fencing token", "send the lease's token in its wire form (fence.Token.String): plain numbers are not accepted here", 0, false}
	refuseBusy        = refusal{reasonFenceBusy, http.StatusServiceUnavailable, codes.Unavailable, "Resource busy", "an earlier request for this resource is still being handled; this one was not admitted", time.Second, false}
	refuseFenceStore  = refusal{reasonFenceStoreUnavailable, http.StatusServiceUnavailable, codes.Unavailable, "Fence store unavailable", "the fence store did not answer", time.Second, false}
)

// heldHereDetail is a contended refusal's detail when the holder is a
// lease of this process (lease.NotAcquiredError.HeldHere): the client's
// own earlier request, say, still running here.
const heldHereDetail = "another request on this replica is doing this work"

// acquireRefusal classifies an Acquire error: every permit held,
// contended (retry after the holder's TTL; the detail says when the
// holder is on this replica, or names the holder's replica when its
// Locker has a lease.Config.Replica), unknown (the work did not run; the
// clean-up frees the key within moments), or anything else.
func acquireRefusal(err error) refusal {
	var busy *lease.NotAcquiredError
	switch {
	case errors.Is(err, errSaturated):
		return refuseSaturated
	case errors.As(err, &busy):
		r := refuseContended
		r.retry = max(busy.HolderTTL, time.Second)
		switch {
		case busy.HeldHere:
			r.detail = heldHereDetail
		case busy.HolderReplica != "":
			r.detail = "replica " + busy.HolderReplica + " is doing this work"
		}
		return r
	case errors.Is(err, lease.ErrUnknown):
		return refuseUnknown
	}
	return refuseUnavailable
}

// fenceRefusal classifies a guard's token or store error.
func fenceRefusal(err error) refusal {
	switch {
	case errors.Is(err, fence.ErrStale):
		return refuseStale
	case errors.Is(err, fence.ErrMalformed):
		return refuseMalformed
	case errors.Is(err, fence.ErrForeign):
		return refuseForeign
	case errors.Is(err, fence.ErrForged):
		return refuseForged
	case errors.Is(err, fence.ErrAhead):
		return refuseAhead
	case errors.Is(err, fence.ErrUnscoped):
		return refuseUnscoped
	case errors.Is(err, errMissing):
		return refuseMissing
	case errors.Is(err, errKeyBusy):
		return refuseBusy
	}
	return refuseFenceStore
}

// problem is r as an HTTP problem.
func (r refusal) problem(lock string, err error) *Problem {
	return &Problem{Type: "urn:lockwatch:problem:" + r.reason, Title: r.title, Status: r.status, Detail: r.message(err),
		Reason: r.reason, LockName: lock, RetryAfter: r.retry, Err: err}
}

// grpcStatus is r as a gRPC status with ErrorInfo and, when retrying makes
// sense, RetryInfo.
func (r refusal) grpcStatus(lock string, err error) error {
	info := &errdetails.ErrorInfo{Reason: r.reason, Domain: errorDomain}
	if lock != "" {
		info.Metadata = map[string]string{"lock_name": lock}
	}
	st := status.New(r.code, r.message(err))
	var werr error
	if r.retry > 0 {
		st, werr = st.WithDetails(info, &errdetails.RetryInfo{RetryDelay: durationpb.New(r.retry)})
	} else {
		st, werr = st.WithDetails(info)
	}
	if werr != nil { // only for unmarshalable details: never for these two
		return status.Error(r.code, r.message(err))
	}
	return st.Err()
}

func (r refusal) message(err error) string {
	if r.fromErr && err != nil {
		return err.Error()
	}
	return r.detail
}

// fenceStatus is a guard's refusal on gRPC. A call that gave up waiting
// for its key because its own context ended gets that context's status
// (CANCELED, DEADLINE_EXCEEDED), as any gRPC call whose caller left does.
func fenceStatus(err error) error {
	if errors.Is(err, errKeyBusy) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return status.FromContextError(err).Err()
	}
	return fenceRefusal(err).grpcStatus("", err)
}

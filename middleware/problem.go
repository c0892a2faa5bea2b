package middleware

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// ErrorDomain is the ErrorInfo domain of every gRPC status the middleware
// returns.
const ErrorDomain = "lockwatch"

// Reasons: the ErrorInfo reason on gRPC, the "reason" member of HTTP problem
// bodies. A closed set clients can switch on.
const (
	ReasonContended      = "LEASE_CONTENDED"   // another replica holds the lease: retry later
	ReasonUnknown        = "LEASE_UNKNOWN"     // Redis did not answer in time: the work did not run
	ReasonLost           = "LEASE_LOST"        // the lease was lost before the handler answered
	ReasonUnavailable    = "LEASE_UNAVAILABLE" // the Locker is closed or failed
	ReasonFenceStale     = "FENCE_STALE"       // a newer holder has written: this write is late
	ReasonFenceMalformed = "FENCE_MALFORMED"
	ReasonFenceMissing   = "FENCE_MISSING"
	ReasonFenceStore     = "FENCE_UNAVAILABLE" // the fence store did not answer
	ReasonFenceBusy      = "FENCE_BUSY"        // an earlier request for the key still ran: this one was not admitted
)

// Problem is an HTTP refusal, written as RFC 9457 application/problem+json
// by WriteProblem.
type Problem struct {
	Type       string        `json:"type"`
	Title      string        `json:"title"`
	Status     int           `json:"status"`
	Detail     string        `json:"detail,omitempty"`
	Reason     string        `json:"reason"`
	LockName   string        `json:"lock_name,omitempty"`
	RetryAfter time.Duration `json:"-"` // sent as the Retry-After header, in whole seconds (at least 1)
	Err        error         `json:"-"` // what caused it, for custom writers and logs
}

// WriteProblem writes p as application/problem+json, with Retry-After when
// p.RetryAfter is set. It drops the framing and caching headers a handler
// may have set before the refusal (Content-Length, Content-Encoding, ETag,
// Last-Modified) and marks the answer Cache-Control: no-store, so no cache
// keeps a refusal and no client decodes it with the wrong framing.
func WriteProblem(w http.ResponseWriter, _ *http.Request, p *Problem) {
	h := w.Header()
	for _, k := range []string{"Content-Length", "Content-Encoding", "Etag", "Last-Modified", "Expires"} {
		h.Del(k)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/problem+json")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(p.RetryAfter)))
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func retrySeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

func problem(status int, reason, title, detail, lock string, retry time.Duration, err error) *Problem {
	return &Problem{Type: "urn:lockwatch:problem:" + reason, Title: title, Status: status, Detail: detail,
		Reason: reason, LockName: lock, RetryAfter: retry, Err: err}
}

// acquireProblem maps an Acquire error to the answer of DESIGN's table:
// contended 409 with the holder's TTL as Retry-After, unknown 503 (the work
// did not run; the clean-up frees the key within moments), anything else 503.
func acquireProblem(err error, lock string) *Problem {
	var busy *lease.NotAcquiredError
	switch {
	case errors.As(err, &busy):
		return problem(http.StatusConflict, ReasonContended, "Lease held by another replica",
			"another replica is doing this work", lock, max(busy.HolderTTL, time.Second), err)
	case errors.Is(err, lease.ErrUnknown):
		return problem(http.StatusServiceUnavailable, ReasonUnknown, "Lease state unknown",
			"the lock service did not answer in time; the work did not run", lock, time.Second, err)
	}
	return problem(http.StatusServiceUnavailable, ReasonUnavailable, "Lease unavailable",
		"the lock service is unavailable; the work did not run", lock, time.Second, err)
}

// lostProblem is the answer when the lease was lost before the handler
// wrote anything.
func lostProblem(err error, lock string) *Problem {
	return problem(http.StatusServiceUnavailable, ReasonLost, "Lease lost",
		"the lease was lost while the work ran; it may not have completed", lock, time.Second, err)
}

// fenceProblem maps a guard's token or store error.
func fenceProblem(err error) *Problem {
	switch {
	case errors.Is(err, fence.ErrStale):
		return problem(http.StatusConflict, ReasonFenceStale, "Stale fencing token",
			"a newer lease holder has already written", "", 0, err)
	case errors.Is(err, fence.ErrMalformed):
		return problem(http.StatusBadRequest, ReasonFenceMalformed, "Malformed fencing token", err.Error(), "", 0, err)
	case errors.Is(err, fence.ErrMissing):
		return problem(http.StatusPreconditionRequired, ReasonFenceMissing, "Fencing token required",
			"send the lease's token in the "+fence.Header+" header", "", 0, err)
	case errors.Is(err, errKeyBusy):
		return problem(http.StatusServiceUnavailable, ReasonFenceBusy, "Resource busy",
			"an earlier request for this resource is still being handled; this one was not admitted", "", time.Second, err)
	}
	return problem(http.StatusServiceUnavailable, ReasonFenceStore, "Fence unavailable",
		"the fence store did not answer", "", time.Second, err)
}

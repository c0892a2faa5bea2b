package middleware

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"
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

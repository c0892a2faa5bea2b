package middleware

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Problem is an HTTP refusal, as the error writer gets it
// (Config.ErrorWriter) and as the default writer sends it: an RFC 9457
// application/problem+json body. Reason is one of the reasons of the package
// doc's table, or empty (and left out) in WriteError's 500 for an error the
// table has no reason for.
type Problem struct {
	Type       string        `json:"type"`
	Title      string        `json:"title"`
	Status     int           `json:"status"`
	Detail     string        `json:"detail,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	LockName   string        `json:"lock_name,omitempty"`
	RetryAfter time.Duration `json:"-"` // sent as the Retry-After header, in whole seconds (at least 1)
	Err        error         `json:"-"` // what caused it, for custom writers and logs
}

// writeProblem is the default error writer (see Config.ErrorWriter). It
// drops the framing and caching headers a handler may have set before the
// refusal (Content-Length, Content-Encoding, ETag, Last-Modified, Expires)
// so that no cache keeps a refusal and no client decodes it with the wrong
// framing, and the Fencing-Token a handler set (a refused request's token
// must not be shown as current).
func writeProblem(w http.ResponseWriter, _ *http.Request, p *Problem) {
	h := w.Header()
	for _, k := range []string{"Content-Length", "Content-Encoding", "Etag", "Last-Modified", "Expires", tokenHeader} {
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

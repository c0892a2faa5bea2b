package middleware

import (
	"bufio"
	"net"
	"net/http"

	"github.com/lockwatch/lockwatch/lease"
)

// HTTP returns middleware that runs each request holding the lease on
// key(r); a key of "" runs the request without a lock. Keys are request
// input: lockwatch bounds and hashes them. The handler's context is the
// lease's (the package doc says what a loss does to it). A request that
// cannot take the lease, or whose handler returns without writing anything
// after the lease was lost, is refused with LEASE_CONTENDED (409,
// Retry-After: the holder's TTL), LEASE_UNKNOWN, LEASE_UNAVAILABLE or
// LEASE_LOST (503, Retry-After), as application/problem+json
// (Config.ErrorWriter to change). A success status sent after the loss
// counts as a late completion (lockwatch_lease_late_completions_total), and
// so does a streaming handler that sent its status before the loss and then
// stopped, since the middleware cannot tell when it stopped. A hijacked
// connection is left alone. Put an http.TimeoutHandler outside this
// middleware, not inside (see the package doc).
//
// Wrap the handler registered on a ServeMux (mux.Handle(pattern,
// mw(handler))) so that r.Pattern, the default lock name, is known.
func HTTP(locker *lease.Locker, key func(*http.Request) string, c Config) func(http.Handler) http.Handler {
	if key == nil {
		panic("middleware: nil key function")
	}
	h := newHolder(locker, newHolderConfig(c))
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k := key(r)
			if k == "" {
				next.ServeHTTP(w, r)
				return
			}
			name := h.cfg.httpName(r)
			l, err := h.acquire(r.Context(), k, name)
			if err != nil {
				h.cfg.errorWriter(w, r, acquireRefusal(err).problem(name, err))
				return
			}
			rec := &statusRecorder{ResponseWriter: w}
			returned := false
			defer func() {
				answered := rec.status != 0 || rec.hijacked
				lost := h.end(l.Context(), l, name, returned && answered && !rec.hijacked && rec.status < 400)
				if lost != nil && returned && !answered {
					h.cfg.errorWriter(w, r, refuseLost.problem(name, lost))
				}
			}()
			next.ServeHTTP(rec, r.WithContext(withRoute(l.Context(), route{name, h.cfg.errorWriter})))
			returned = true
		})
	}
}

// statusRecorder remembers the status a handler sent (0 until it sends
// one) and whether it took the connection over.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

// Hijack keeps handlers that assert http.Hijacker (WebSocket libraries)
// working. A hijacked connection is the handler's: no refusal is written on
// it and its outcome is not judged.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.hijacked = true
	}
	return conn, rw, err
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush, Hijack and deadlines.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush keeps streaming handlers that assert http.Flusher working.
func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

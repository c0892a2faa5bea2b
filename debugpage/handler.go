package debugpage

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

// Handler returns the page of locker's leases: HTML, or JSON with
// ?format=json. It panics on a nil locker, a programming error.
func Handler(locker *lease.Locker) http.Handler {
	if locker == nil {
		panic("debugpage: nil Locker")
	}
	return &handler{locker: locker}
}

type handler struct {
	locker *lease.Locker
}

// csp forbids everything but the page's own inline style (and data: images,
// which it does not use today): no script, no external load, no framing, no
// form target. A hostile lock name that slipped past the escaping could
// still run nothing.
const csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", csp)
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "debugpage: read-only, GET or HEAD only", http.StatusMethodNotAllowed)
		return
	}
	v := newView(h.locker.Snapshot(), obs.Campaigns.List(), obs.HeldPermits.List())
	var body bytes.Buffer
	switch format := r.URL.Query().Get("format"); format {
	case "json":
		enc := json.NewEncoder(&body)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			http.Error(w, "debugpage: "+err.Error(), http.StatusInternalServerError)
			return
		}
		hdr.Set("Content-Type", "application/json")
	case "", "html":
		// Rendered in full before the first byte goes out, so that a
		// template error is a 500, not half a page.
		if err := page.Execute(&body, v); err != nil {
			http.Error(w, "debugpage: "+err.Error(), http.StatusInternalServerError)
			return
		}
		hdr.Set("Content-Type", "text/html; charset=utf-8")
	default:
		http.Error(w, "debugpage: unknown format (json, or none for HTML)", http.StatusBadRequest)
		return
	}
	_, _ = w.Write(body.Bytes())
}

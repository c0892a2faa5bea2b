package debugpage_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// page is the JSON of the page, decoded with the documented names.
type page struct {
	Taken  time.Time   `json:"taken"`
	Leases []leaseJSON `json:"leases"`
	Losses []lossJSON  `json:"losses"`
	// Elections are the process's candidates.
	Elections []electionJSON `json:"elections"`
	// Permits are the process's held permits.
	Permits []permitJSON `json:"permits"`
}

type permitJSON struct {
	Semaphore string    `json:"semaphore"`
	KeyHash   string    `json:"key_hash"`
	Key       string    `json:"key"`
	Namespace string    `json:"namespace"`
	Index     int       `json:"index"`
	Fence     int64     `json:"fence"`
	Since     time.Time `json:"since"`
}

type electionJSON struct {
	Election string    `json:"election"`
	Identity string    `json:"identity"`
	Leading  bool      `json:"leading"`
	Term     int64     `json:"term"`
	Since    time.Time `json:"since"`
}

type leaseJSON struct {
	Name          string  `json:"name"`
	KeyHash       string  `json:"key_hash"`
	Key           string  `json:"key"`
	Namespace     string  `json:"namespace"`
	Permit        *int    `json:"permit"`
	Fence         int64   `json:"fence"`
	Holder        string  `json:"holder"`
	State         string  `json:"state"`
	TTLMS         float64 `json:"ttl_ms"`
	AgeMS         float64 `json:"age_ms"`
	RemainingMS   float64 `json:"remaining_ms"`
	Renewals      int     `json:"renewals"`
	LastRenewalMS float64 `json:"last_renewal_ms"`
}

type lossJSON struct {
	Name          string    `json:"name"`
	KeyHash       string    `json:"key_hash"`
	Key           string    `json:"key"`
	Namespace     string    `json:"namespace"`
	Fence         int64     `json:"fence"`
	Reason        string    `json:"reason"`
	LostAt        time.Time `json:"lost_at"`
	HeldMS        float64   `json:"held_ms"`
	Renewals      int       `json:"renewals"`
	LastRenewalMS float64   `json:"last_renewal_ms"`
}

// quiet discards the Warn logs of the losses the tests cause.
var quiet = slog.New(slog.DiscardHandler)

// fixture is a Locker on a private redis-server with the page served on
// a loopback test server.
type fixture struct {
	srv    *redistest.Server
	locker *lease.Locker
	web    *httptest.Server
	named  map[string]*lease.Locker // locker with each lock name (acquire)
}

func newFixture(t *testing.T, ttl time.Duration, rawKeys bool) *fixture {
	t.Helper()
	srv := redistest.Start(t)
	locker := lease.NewLocker(srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true }),
		lease.Config{TTL: ttl, Telemetry: telemetry.New(telemetry.Config{Logger: quiet, RawKeys: rawKeys})})
	t.Cleanup(func() { _ = locker.Close() })
	mux := http.NewServeMux()
	mux.Handle("/debug/lockwatch", debugpage.Handler(locker))
	web := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(web.Close)
	return &fixture{srv: srv, locker: locker, web: web, named: map[string]*lease.Locker{}}
}

func (f *fixture) url(query string) string { return f.web.URL + "/debug/lockwatch" + query }

// acquire takes key under the lock name, released when the test ends.
func (f *fixture) acquire(t *testing.T, name, key string) *lease.Lease {
	t.Helper()
	lk, ok := f.named[name]
	if !ok {
		var err error
		lk, err = f.locker.With(lease.Config{Name: name})
		require.NoError(t, err)
		f.named[name] = lk
	}
	l, err := lk.Acquire(testCtx(t), key)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

// get fetches url and returns the response (body read and closed) and body.
func (f *fixture) get(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, nil)
	require.NoError(t, err)
	resp, err := f.web.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// json fetches and decodes the JSON page.
func (f *fixture) json(t *testing.T) (page, string) {
	t.Helper()
	resp, body := f.get(t, http.MethodGet, f.url("?format=json"))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var p page
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields() // every field is one the package doc names
	require.NoError(t, dec.Decode(&p), body)
	return p, body
}

func (f *fixture) html(t *testing.T) string {
	t.Helper()
	resp, body := f.get(t, http.MethodGet, f.url(""))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	return body
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lostWith waits until l is lost and returns its reason.
func lostWith(t *testing.T, l *lease.Lease, within time.Duration) lease.LossReason {
	t.Helper()
	select {
	case <-l.Context().Done():
	case <-time.After(within):
		t.Fatalf("lease not lost within %v", within)
	}
	var lost *lease.LostError
	require.ErrorAs(t, context.Cause(l.Context()), &lost, "cause %v", context.Cause(l.Context()))
	return lost.Reason
}

// table is one <table> of a page: its header cells and its rows' cells,
// as text.
type table struct {
	header []string
	rows   [][]string
}

// col returns the cells of the column headed name.
func (tb table) col(t *testing.T, name string) []string {
	t.Helper()
	i := -1
	for j, h := range tb.header {
		if h == name {
			i = j
		}
	}
	require.GreaterOrEqual(t, i, 0, "no column %q in %q", name, tb.header)
	var out []string
	for _, r := range tb.rows {
		require.Len(t, r, len(tb.header), "row %q", r)
		out = append(out, r[i])
	}
	return out
}

// parseTable reads the table with the given id from an HTML document (the
// page as served, or the DOM Chromium dumped), with encoding/xml in its
// lenient HTML mode: the page is plain, well-nested markup.
func parseTable(t *testing.T, doc, id string) (table, bool) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	var (
		tb        table
		found, in bool
		depth     int
		cell      *strings.Builder
		row       []string
		headerRow bool
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return tb, found
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			if !in {
				if tok.Name.Local == "table" && attr(tok, "id") == id {
					in, found, depth = true, true, 1
				}
				continue
			}
			depth++
			switch tok.Name.Local {
			case "tr":
				row, headerRow = nil, false
			case "th", "td":
				headerRow = tok.Name.Local == "th"
				cell = &strings.Builder{}
			}
		case xml.EndElement:
			if !in {
				continue
			}
			depth--
			switch tok.Name.Local {
			case "th", "td":
				row = append(row, strings.TrimSpace(cell.String()))
				cell = nil
			case "tr":
				if headerRow {
					tb.header = row
				} else {
					tb.rows = append(tb.rows, row)
				}
			}
			if depth == 0 {
				in = false
			}
		case xml.CharData:
			if cell != nil {
				cell.Write(tok)
			}
		}
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// forceRelease takes key from its holder as an operator does: Inspect,
// then ForceRelease of the holder seen.
func (f *fixture) forceRelease(t *testing.T, key string) lease.KeyInfo {
	t.Helper()
	seen, err := f.locker.Inspect(testCtx(t), key)
	require.NoError(t, err)
	require.True(t, seen.Held)
	info, err := f.locker.ForceRelease(testCtx(t), key, seen.Holder)
	require.NoError(t, err)
	require.True(t, info.Held)
	return info
}

// keyHash is the hash of key in namespace, as Redis's names carry it:
// what lockwatch inspect --key-hash takes.
func keyHash(namespace, key string) string {
	return leasekeys.HashTag(leasekeys.Of(namespace, key).Lock)
}

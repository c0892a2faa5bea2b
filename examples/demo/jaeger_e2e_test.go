//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/integration"
)

// latencyHistograms are the histograms whose exemplars must lead to stored
// traces, beside the fence rejections.
var latencyHistograms = []string{
	obs.PromLeaseAcquireDuration,
	obs.PromLeaseWaitDuration,
	obs.PromLeaseHoldDuration,
	obs.PromLeaseCancellationLatency,
}

// tracesInJaeger checks, through Jaeger's query API, that the exemplars
// of an OpenMetrics scrape of the demo (which exports its spans to that
// Jaeger) lead to stored traces: every trace id on the fence rejections and
// the latency histograms resolves; a rejected write's trace holds the
// fence.check span (result rejected) under the late holder's span, which
// carries the lease.lost event; every lease.acquire taken for a request is
// the child of the HTTP or gRPC server span; and those spans, and the HTTP
// client span between a replica and the ledger, are named and attributed
// by the OpenTelemetry HTTP and RPC conventions. It stops the demo, which
// flushes its exporter, before it reads whole traces.
func tracesInJaeger(t *testing.T, jaeger jaegerAPI, metrics string, stopDemo func()) {
	// Scrape until the fence rejections and every latency histogram have
	// exemplars, and Jaeger already holds a rejection whose trace shows the
	// late holder's loss (the pause fault; a force-released compaction has
	// no request span to carry it).
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ids := map[string]map[string]bool{} // metric -> trace ids
	var lateWrite *jaegerTrace
	start := time.Now()
	for deadline := start.Add(180 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		for metric, traceIDs := range exemplarTraceIDs(scrapeOpenMetrics(t, client, metrics)) {
			if ids[metric] == nil {
				ids[metric] = map[string]bool{}
			}
			for id := range traceIDs {
				ids[metric][id] = true
			}
		}
		if lateWrite == nil {
			for id := range ids[obs.PromFenceRejections] {
				if tr, ok := jaeger.trace(t, id); ok && lateWriter(tr) != nil {
					lateWrite = tr
					break
				}
			}
		}
		if lateWrite != nil && len(missingExemplars(ids)) == 0 {
			break
		}
	}
	require.Empty(t, missingExemplars(ids), "metrics without exemplars after %v", time.Since(start).Round(time.Second))
	if lateWrite == nil {
		t.Fatalf("no fence rejection's trace held the late holder's lease.lost after %v; Jaeger holds:\n%s",
			time.Since(start).Round(time.Second), describeRejections(t, jaeger, ids[obs.PromFenceRejections]))
	}
	t.Logf("exemplars and a late write's trace after %v", time.Since(start).Round(time.Second))

	// Shutting the demo down flushes the exporter: every span has ended and
	// been sent. Jaeger's batch processor then writes within its timeout.
	stopDemo()

	// The late write's trace again, with the workload's client span, which
	// ends only once the workload has read the reply.
	assert.Eventually(t, func() bool {
		tr, ok := jaeger.trace(t, lateWrite.TraceID)
		if !ok {
			return false
		}
		lateWrite = tr
		w := lateWriter(tr)
		return w != nil && tr.parent(w) != nil
	}, 10*time.Second, 200*time.Millisecond, "the late writer's caller is not in trace %s", lateWrite.TraceID)
	checkLedgerHop(t, lateWrite)

	traces := map[string]*jaegerTrace{}
	for metric, traceIDs := range ids {
		for id := range traceIDs {
			tr := traces[id] // an exemplar of several metrics is fetched once
			if tr == nil && !assert.Eventually(t, func() bool {
				var found bool
				tr, found = jaeger.trace(t, id)
				return found
			}, 10*time.Second, 200*time.Millisecond, "%s exemplar trace %s not in Jaeger", metric, id) {
				continue
			}
			traces[id] = tr
			if metric == obs.PromFenceRejections {
				assert.NotEmpty(t, tr.spansNamed(obs.SpanFenceCheck, "result", "rejected"),
					"rejection exemplar trace %s has no rejected fence.check span", id)
			}
		}
	}
	t.Logf("%d exemplar trace ids resolved", len(traces))

	// Every lease.acquire taken for a request (a job term's is a root: the
	// background job has no span of its own) is the child of the HTTP
	// or gRPC server span.
	for _, tr := range jaeger.search(t, "lockwatch-demo", obs.SpanAcquire, 500) {
		traces[tr.TraceID] = tr
	}
	var httpParents, grpcParents, unfinished int
	for _, tr := range traces {
		for _, acquire := range tr.spansNamed(obs.SpanAcquire, "", "") {
			parent := tr.parent(acquire)
			switch {
			case parent == nil && acquire.hasParent():
				// A request still in flight when the demo stopped: its
				// server span ends after the exporter has shut down, and
				// is never stored. The counts below still need both kinds.
				unfinished++
				continue
			case parent == nil:
				assert.Equal(t, jobName, acquire.tag(obs.AttrLockName), "lease.acquire %s without a parent", acquire.SpanID)
				continue
			}
			assert.Equal(t, "server", parent.tag("span.kind"), "lease.acquire's parent %q", parent.OperationName)
			switch {
			case parent.tag("rpc.system.name") == "grpc":
				grpcParents++
				checkGRPCServerSpan(t, parent)
			case parent.tag("http.request.method") != "":
				httpParents++
				checkHTTPServerSpan(t, parent)
			default:
				t.Errorf("lease.acquire's parent %q is neither an HTTP nor a gRPC server span: %v", parent.OperationName, parent.Tags)
			}
		}
	}
	assert.Positive(t, httpParents, "no lease.acquire under an HTTP server span")
	assert.Positive(t, grpcParents, "no lease.acquire under a gRPC server span")
	t.Logf("lease.acquire parents: %d HTTP, %d gRPC server spans (%d of requests still in flight at the stop)", httpParents, grpcParents, unfinished)
}

// checkHTTPServerSpan checks the HTTP semantic conventions: the name is
// "{method} {route}", with the route (a path template), the method, the
// status code, the URL's scheme and path as attributes.
func checkHTTPServerSpan(t *testing.T, s *jaegerSpan) {
	t.Helper()
	method, route := s.tag("http.request.method"), s.tag("http.route")
	assert.Contains(t, []string{"GET", "POST", "PUT"}, method, "http.request.method of %q", s.OperationName)
	assert.True(t, strings.HasPrefix(route, "/"), "http.route %q of %q is not a path template", route, s.OperationName)
	assert.Equal(t, method+" "+route, s.OperationName, "HTTP server span name")
	assert.NotEmpty(t, s.tag("http.response.status_code"), "http.response.status_code of %q", s.OperationName)
	assert.Equal(t, "http", s.tag("url.scheme"), "url.scheme of %q", s.OperationName)
	assert.True(t, strings.HasPrefix(s.tag("url.path"), "/"), "url.path of %q", s.OperationName)
}

// checkLedgerHop checks a late write's path, span by span, from the
// rejected fence.check up: the ledger's HTTP server span, the replica's
// HTTP client span that called it, the replica's HTTP server span with the
// lease.lost event, and the workload's HTTP client span that called that.
func checkLedgerHop(t *testing.T, tr *jaegerTrace) {
	t.Helper()
	for _, check := range tr.spansNamed(obs.SpanFenceCheck, "result", "rejected") {
		t.Logf("late write: %s", tr.ancestry(check))
		ledger := tr.parent(check)
		if !assert.NotNil(t, ledger, "rejected fence.check %s has no stored parent", check.SpanID) {
			continue
		}
		assert.Equal(t, "server", ledger.tag("span.kind"), "fence.check's parent %q", ledger.OperationName)
		checkHTTPServerSpan(t, ledger)
		replica := checkHTTPClientSpan(t, tr, ledger)
		if !assert.NotNil(t, replica, "the replica's client span has no stored parent") {
			continue
		}
		assert.Equal(t, "server", replica.tag("span.kind"), "the replica's client span's parent %q", replica.OperationName)
		checkHTTPServerSpan(t, replica)
		assert.True(t, replica.hasEvent(obs.EventLost), "the late writer's span %q has no %s event", replica.OperationName, obs.EventLost)
		checkHTTPClientSpan(t, tr, replica)
	}
}

// checkHTTPClientSpan checks the HTTP client span that is server's parent
// by the HTTP conventions: named "{method}" (no URL template), with the
// method, url.full, server.address, server.port and the status code the
// server answered, and status Error for a 4xx or 5xx answer or for none.
// It returns the client span's own parent (nil when it has none stored).
func checkHTTPClientSpan(t *testing.T, tr *jaegerTrace, server *jaegerSpan) *jaegerSpan {
	t.Helper()
	client := tr.parent(server)
	if !assert.NotNil(t, client, "server span %q has no stored parent", server.OperationName) {
		return nil
	}
	assert.Equal(t, "client", client.tag("span.kind"), "server span %q's parent %q", server.OperationName, client.OperationName)
	assert.Equal(t, server.tag("http.request.method"), client.OperationName, "HTTP client span name")
	assert.Equal(t, client.OperationName, client.tag("http.request.method"), "http.request.method of the client span")
	assert.True(t, strings.HasPrefix(client.tag("url.full"), "http://127.0.0.1:"), "url.full %q", client.tag("url.full"))
	assert.Equal(t, "127.0.0.1", client.tag("server.address"), "server.address of the client span")
	assert.NotEmpty(t, client.tag("server.port"), "server.port of the client span")
	switch status := client.tag("http.response.status_code"); status {
	case "":
		// The client gave up first (the workload's deadline passes while
		// a pause holds the replica): an error, with its type.
		assert.Equal(t, "ERROR", client.tag("otel.status_code"), "a client span without an answer")
		assert.NotEmpty(t, client.tag("error.type"), "error.type of a client span without an answer")
	default:
		assert.Equal(t, server.tag("http.response.status_code"), status, "the client span's status code is the server's")
		if code, _ := strconv.Atoi(status); code >= 400 {
			assert.Equal(t, "ERROR", client.tag("otel.status_code"), "a client span of a %d answer", code)
		}
	}
	return tr.parent(client)
}

// checkGRPCServerSpan checks the RPC semantic conventions as otelgrpc
// v0.72 follows them: rpc.system.name grpc, rpc.method the fully-qualified
// "{package.Service}/{Method}" (the conventions no longer have rpc.service),
// the span named after it, and the response's status code.
func checkGRPCServerSpan(t *testing.T, s *jaegerSpan) {
	t.Helper()
	method := s.tag("rpc.method")
	assert.Regexp(t, `^lockwatch\.example\.Reports/(Generate|Stream)$`, method, "rpc.method of %q (tags %v)", s.OperationName, s.Tags)
	assert.Equal(t, method, s.OperationName, "gRPC server span name")
	assert.NotEmpty(t, s.tag("rpc.response.status_code"), "rpc.response.status_code of %q", s.OperationName)
}

// lateWriter returns the span above a rejected fence.check that carries a
// lease.lost event, the request of a holder that had lost its lease, or
// nil when the trace holds none.
func lateWriter(tr *jaegerTrace) *jaegerSpan {
	for _, check := range tr.spansNamed(obs.SpanFenceCheck, "result", "rejected") {
		for s := tr.parent(check); s != nil; s = tr.parent(s) {
			if s.hasEvent(obs.EventLost) {
				return s
			}
		}
	}
	return nil
}

// ancestry names s and its stored ancestors, nearest first, each with its
// HTTP status code or error type and its lease.lost event.
func (tr *jaegerTrace) ancestry(s *jaegerSpan) string {
	var names []string
	for ; s != nil; s = tr.parent(s) {
		var notes []string
		for _, key := range []string{"http.response.status_code", "error.type"} {
			if v := s.tag(key); v != "" {
				notes = append(notes, v)
			}
		}
		if s.hasEvent(obs.EventLost) {
			notes = append(notes, obs.EventLost)
		}
		name := s.OperationName
		if len(notes) > 0 {
			name += " (" + strings.Join(notes, ", ") + ")"
		}
		names = append(names, name)
	}
	return strings.Join(names, " < ")
}

// describeRejections says, for each trace id, what Jaeger holds: each
// rejected fence.check's ancestry, nearest first, or nothing.
func describeRejections(t *testing.T, jaeger jaegerAPI, ids map[string]bool) string {
	t.Helper()
	var b strings.Builder
	for id := range ids {
		tr, ok := jaeger.trace(t, id)
		if !ok {
			fmt.Fprintf(&b, "%s: not stored\n", id)
			continue
		}
		checks := tr.spansNamed(obs.SpanFenceCheck, "result", "rejected")
		fmt.Fprintf(&b, "%s: %d spans, %d rejected fence.check\n", id, len(tr.Spans), len(checks))
		for _, check := range checks {
			fmt.Fprintf(&b, "  %s\n", tr.ancestry(check))
		}
	}
	return b.String()
}

// exemplarRE matches an OpenMetrics sample line with an exemplar.
var exemplarRE = regexp.MustCompile(`(?m)^(lockwatch_[a-z_]+?)(?:_bucket|_count|_sum)?\{[^}]*\} \S+ # \{[^}]*trace_id="([0-9a-f]{32})"`)

// exemplarTraceIDs returns the exemplars' trace ids by metric family.
func exemplarTraceIDs(om string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, m := range exemplarRE.FindAllStringSubmatch(om, -1) {
		if out[m[1]] == nil {
			out[m[1]] = map[string]bool{}
		}
		out[m[1]][m[2]] = true
	}
	return out
}

func missingExemplars(ids map[string]map[string]bool) []string {
	var missing []string
	for _, m := range append([]string{obs.PromFenceRejections}, latencyHistograms...) {
		if len(ids[m]) == 0 {
			missing = append(missing, m)
		}
	}
	return missing
}

// jaegerAPI is a Jaeger started by startJaeger: its OTLP/HTTP receiver and
// its query service.
type jaegerAPI struct {
	otlp   string // http://127.0.0.1:port
	query  string // http://127.0.0.1:port
	client *http.Client
}

// jaegerConfig runs Jaeger v2 with in-memory storage, an OTLP/HTTP
// receiver and the query service, every listener on loopback, and no
// telemetry of its own (whose Prometheus endpoint would listen on :8888).
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    http:
      endpoint: %[2]s
    grpc:
      endpoint: %[3]s
receivers:
  otlp:
    protocols:
      http:
        endpoint: %[1]s
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// startJaeger runs the binary LOCKWATCH_JAEGER names on free loopback ports
// and stops it when the test ends.
func startJaeger(t *testing.T) jaegerAPI {
	bin := os.Getenv("LOCKWATCH_JAEGER")
	if bin == "" {
		t.Fatal("LOCKWATCH_JAEGER is not set: run make e2e, which builds Jaeger from tools/jaeger")
	}
	dir := t.TempDir()
	otlp, query, grpcQuery := integration.FreeLoopbackAddr(t), integration.FreeLoopbackAddr(t), integration.FreeLoopbackAddr(t)
	cfgFile := filepath.Join(dir, "jaeger.yaml")
	require.NoError(t, os.WriteFile(cfgFile, fmt.Appendf(nil, jaegerConfig, otlp, query, grpcQuery), 0o600))
	api := jaegerAPI{otlp: "http://" + otlp, query: "http://" + query,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	ready := func() bool {
		resp, err := api.client.Get(api.query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
		conn, err := net.DialTimeout("tcp", otlp, time.Second)
		if err != nil {
			return false
		}
		return conn.Close() == nil
	}
	startServer(t, "jaeger", ready, 60*time.Second, bin, "--config=file:"+cfgFile)
	return api
}

// The query API's JSON (/api/traces): Jaeger's own model, with span kinds
// as the span.kind tag and span events as logs whose event field is the
// event's name.
type jaegerTrace struct {
	TraceID string        `json:"traceID"`
	Spans   []*jaegerSpan `json:"spans"`
}

type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []jaegerTag `json:"tags"`
	Logs []struct {
		Fields []jaegerTag `json:"fields"`
	} `json:"logs"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

func (s *jaegerSpan) tag(key string) string {
	for _, tag := range s.Tags {
		if tag.Key == key {
			return fmt.Sprint(tag.Value)
		}
	}
	return ""
}

func (s *jaegerSpan) hasEvent(name string) bool {
	for _, l := range s.Logs {
		for _, f := range l.Fields {
			if f.Key == "event" && f.Value == name {
				return true
			}
		}
	}
	return false
}

// spansNamed returns the spans of that name, with tag key equal to value
// when key is not empty.
func (tr *jaegerTrace) spansNamed(name, key, value string) []*jaegerSpan {
	var out []*jaegerSpan
	for _, s := range tr.Spans {
		if s.OperationName == name && (key == "" || s.tag(key) == value) {
			out = append(out, s)
		}
	}
	return out
}

func (tr *jaegerTrace) parent(s *jaegerSpan) *jaegerSpan {
	for _, ref := range s.References {
		if ref.RefType != "CHILD_OF" {
			continue
		}
		for _, p := range tr.Spans {
			if p.SpanID == ref.SpanID {
				return p
			}
		}
	}
	return nil
}

// hasParent tells whether s names a parent span, stored or not.
func (s *jaegerSpan) hasParent() bool {
	for _, ref := range s.References {
		if ref.RefType == "CHILD_OF" {
			return true
		}
	}
	return false
}

// trace fetches one trace; false when Jaeger has none of its spans.
func (j jaegerAPI) trace(t *testing.T, id string) (*jaegerTrace, bool) {
	t.Helper()
	traces, status := j.get(t, "/api/traces/"+id)
	if status == http.StatusNotFound || len(traces) == 0 {
		return nil, false
	}
	require.Equal(t, http.StatusOK, status, "GET /api/traces/%s", id)
	return traces[0], true
}

// search returns up to limit traces of the service holding an operation.
func (j jaegerAPI) search(t *testing.T, service, operation string, limit int) []*jaegerTrace {
	t.Helper()
	q := url.Values{"service": {service}, "operation": {operation}, "limit": {fmt.Sprint(limit)}, "lookback": {"1h"}}
	traces, status := j.get(t, "/api/traces?"+q.Encode())
	require.Equal(t, http.StatusOK, status, "search %s %s", service, operation)
	return traces
}

func (j jaegerAPI) get(t *testing.T, path string) ([]*jaegerTrace, int) {
	t.Helper()
	resp, err := j.client.Get(j.query + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Data []*jaegerTrace `json:"data"`
	}
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), "GET %s", path)
	}
	return body.Data, resp.StatusCode
}

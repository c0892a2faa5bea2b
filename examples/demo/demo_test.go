package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives the tests: a demo
// run must stop everything it started.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDemoOnEmbeddedRedis(t *testing.T) {
	runDemo(t, "")
}

func TestDemoOnRedisServer(t *testing.T) {
	srv := redistest.Start(t)
	runDemo(t, srv.Addr())
	keys, err := srv.Do(context.Background(), "DBSIZE")
	require.NoError(t, err)
	assert.EqualValues(t, 0, keys, "the demo deletes its keys from a real Redis on exit")
}

// runDemo runs the demo in-process, the way main does, against redisAddr
// ("" for the embedded Redis) with a short TTL, until its /metrics shows
// data for every lockwatch metric; then stops it and checks the summary.
func runDemo(t *testing.T, redisAddr string) {
	cfg := defaultConfig()
	cfg.redis = redisAddr
	cfg.metrics = "127.0.0.1:0"
	cfg.duration = 0 // until the test has seen enough
	cfg.ttl = 400 * time.Millisecond
	cfg.workers = 6
	cfg.accounts = 3
	cfg.plainEvery = 500 * time.Millisecond
	ready := make(chan string, 1)
	cfg.ready = func(url string) { ready <- url }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, &out) }()

	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("demo ended before serving: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("demo not serving after 30s\n%s", out.String())
	}

	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.Transport.(*http.Transport).CloseIdleConnections()

	// Every signal lockwatch has, fed by the faults, plus the ones the
	// issue names explicitly by their values.
	var families map[string]*dto.MetricFamily
	var missing []string
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		families = scrape(t, client, url)
		missing = append(missingSignals(families), missingNarrations(out.String())...)
		if len(missing) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Empty(t, missing, "signals or narrations missing after 45s\n%s", out.String())

	// Each replica's live lease page is served beside /metrics, and shows
	// what its replica holds and lost: the workload keeps leases held, and
	// the faults have cost some.
	debug := strings.TrimSuffix(url, "/metrics") + "/debug/lockwatch"
	var held, lost int
	for pageDeadline := time.Now().Add(10 * time.Second); time.Now().Before(pageDeadline) && (held == 0 || lost == 0); {
		held, lost = 0, 0
		for _, page := range []string{debug, debug + "/replica-a", debug + "/replica-b", debug + "/replica-a/job", debug + "/replica-b/job"} {
			resp, err := client.Get(page + "?format=json")
			require.NoError(t, err)
			var snap struct {
				Leases []map[string]any `json:"leases"`
				Losses []map[string]any `json:"losses"`
			}
			err = json.NewDecoder(resp.Body).Decode(&snap)
			resp.Body.Close()
			require.NoError(t, err, page)
			require.Equal(t, http.StatusOK, resp.StatusCode, page)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"), page)
			held, lost = held+len(snap.Leases), lost+len(snap.Losses)
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Positive(t, held, "no page showed a lease held")
	assert.Positive(t, lost, "no page showed a lease lost")

	// Exemplars: a stale write's rejection links to the trace that wrote late.
	om := scrapeOpenMetrics(t, client, url)
	assert.Regexp(t, `(?m)^`+obs.PromFenceRejections+`\{[^}]*\} \d+(\.\d+)? # \{[^}]*trace_id="[0-9a-f]{32}"`, om,
		"an exemplar with a trace id on the fence rejections")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("demo did not stop within 30s of its context\n%s", out.String())
	}

	text := out.String()
	t.Log("\n" + text)
	assert.Contains(t, text, "requests ", "plain progress lines")
	assert.Contains(t, text, "Summary after")
	for _, row := range []string{"lease acquires", "leases lost", "late completions", "stale writes rejected", "cancellation latency"} {
		assert.Contains(t, text, row)
	}
	assert.Regexp(t, `job leader terms +[1-9]\d* +.*lost [1-9]`, text, "the job's terms, and how they ended")
	assert.Regexp(t, `time without a leader +[1-9]\d* +before a term: median`, text)
	assert.Regexp(t, `wakes, writes \S+ with fence \d+: the ledger rejects it \(409\)`, text, "the pause's stale write, narrated")
	assert.Contains(t, text, "operator: lockwatch release --force job:compaction", "the force release, narrated")
	assert.Contains(t, text, "debug/lockwatch", "the debug page's URL in the header")
	assert.NotContains(t, text, "\x1b[", "no terminal escapes when stdout is not a terminal")
	summaryInReadme(t, text)
}

// missingSignals lists what has no data yet: every metric lockwatch
// records (a counter or histogram with a non-zero count, a gauge with a
// series; the fence repairs, an operator's mending of a mark that a token
// no lease carried moved ahead, which no fault of the demo makes, with a
// series at zero), the acquire results, loss reasons and outcomes the
// faults are there to produce, the job candidates' waits for a term, and
// the HTTP histograms of otelhttp's handlers and transports.
func missingSignals(families map[string]*dto.MetricFamily) []string {
	var missing []string
	for _, m := range obs.Metrics {
		seriesOnly := m.Kind == obs.UpDownCounter || m.Prom == obs.PromFenceRepairs
		if total(families, m.Prom, nil) == 0 && (!seriesOnly || families[m.Prom] == nil) {
			missing = append(missing, m.Prom)
		}
	}
	for _, want := range []struct {
		name   string
		labels map[string]string
	}{
		{obs.PromLeaseAcquires, map[string]string{"result": "acquired"}},
		{obs.PromLeaseAcquires, map[string]string{"result": "contended"}},
		{obs.PromLeaseAcquires, map[string]string{"result": "unknown"}},
		{obs.PromLeaseLosses, map[string]string{"reason": "deadline"}},
		{obs.PromLeaseLosses, map[string]string{"reason": "max_hold"}},
		{obs.PromLeaseLosses, map[string]string{"reason": "force_released"}}, // the force release
		{obs.PromLeaseForceReleases, map[string]string{"result": "released"}},
		{obs.PromLeaseRenewals, map[string]string{"result": "unknown"}},
		{obs.PromLeaseCommits, map[string]string{obs.AttrResult: "near_expiry"}},
		{obs.PromLeaseCommits, map[string]string{obs.AttrResult: "refused"}},
		{obs.PromLeaseCommits, map[string]string{obs.AttrResult: "stale"}}, // the late writes, through Commit
		{obs.PromFenceChecks, map[string]string{"resource": "ledger", "result": "rejected"}},
		{obs.PromFenceRejections, map[string]string{"resource": "ledger"}},
		{obs.PromLeaseLateCompletions, nil},
		{obs.PromLeaseWaitDuration, map[string]string{"lock_name": jobName, "result": "acquired"}},
		{obs.PromElectionTermChanges, map[string]string{"election": jobName, "reason": "lost"}},
		{obs.PromElectionLosses, map[string]string{"election": jobName, "reason": "force_released"}},
		{obs.PromElectionLeaderlessDuration, map[string]string{"election": jobName}},
		{"http_server_request_duration_seconds", nil},
		{"http_server_request_body_size_bytes", nil},
		{"http_server_response_body_size_bytes", nil},
		{"http_client_request_duration_seconds", nil},
		{"http_client_request_body_size_bytes", nil},
	} {
		if total(families, want.name, want.labels) == 0 {
			missing = append(missing, fmt.Sprintf("%s%v", want.name, want.labels))
		}
	}
	return missing
}

// jobNarrations are what the demo tells of its elected job's faults.
var jobNarrations = []struct{ what, re string }{
	{"a stalled leader's loss", `(?s)the job's leader in term \d+: Redis connection stalls.*` +
		`term \d+ ends: lost \(renewal_unknown\): its work was cancelled before its key could expire`},
	{"a killed leader's successor", `(?s)is killed: nothing resigns its term.*` +
		`elected +replica-\w leads job:compaction in term \d+, after \d+(\.\d+)?m?s without a leader`},
	{"a paused leader's late write, rejected", `the job's leader, stops for \S+ while writing job:compaction.*\n(?s:.*)` +
		`wakes, writes job:compaction with fence \d+: the ledger rejects it \(409\)`},
	{"a force-released leader's stuck write, rejected", `stuck write goes on, writes job:compaction with fence \d+: the ledger rejects it \(409\)`},
}

// faultNarrations are the lines that say a fault struck, what it did and
// what to watch for, one per fault the demo injects.
var faultNarrations = map[string]string{
	faultRedisLoss:  `noreply +replica-\w: a lease command ran in Redis and its reply was lost: watch`,
	faultRedisStall: `stall +replica-\w.*: Redis connection stalls for \S+ \(`,
	faultPause:      `pause +replica-\w.* stops for \S+ `,
	faultOverrun:    `overrun +replica-\w: a report on \S+ ignores its context .*: watch`,
	faultSlowCancel: `slowstop +replica-\w: work whose lease was lost takes \S+ to stop: watch`,
	faultNearExpiry: `expiry +replica-\w.* a report on \S+ .*validity left`,
	faultForce:      `force +operator: lockwatch release --force job:compaction \(holder`,
	faultKill:       `kill +replica-\w, the job's leader in term \d+, is killed`,
}

func TestEveryFaultHasANarration(t *testing.T) {
	for _, name := range faultNames {
		assert.Contains(t, faultNarrations, name)
	}
}

// missingNarrations lists the faults' and the job's narrations not yet in
// out.
func missingNarrations(out string) []string {
	var missing []string
	for _, name := range faultNames {
		if !regexp.MustCompile(faultNarrations[name]).MatchString(out) {
			missing = append(missing, "narration of the fault "+name)
		}
	}
	for _, n := range jobNarrations {
		if !regexp.MustCompile(n.re).MatchString(out) {
			missing = append(missing, "narration: "+n.what)
		}
	}
	return missing
}

// total sums a family's series whose labels include labels: counter and
// gauge values, histogram sample counts.
func total(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range f.GetMetric() {
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return sum
}

func scrape(t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

func scrapeOpenMetrics(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Contains(t, resp.Header.Get("Content-Type"), "application/openmetrics-text")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-metrics", "127.0.0.1:9999", "-duration", "5s", "-faults=false", "-redis", "redis://127.0.0.1:6379/2"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9999", cfg.metrics)
	assert.Equal(t, 5*time.Second, cfg.duration)
	assert.False(t, cfg.faults.any())
	opts, err := redisOptions(cfg.redis)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:6379", opts.Addr)
	assert.Equal(t, 2, opts.DB)

	cfg, err = parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, defaultMetricsAddr, cfg.metrics)
	assert.Equal(t, "true", cfg.faults.String(), "faults on by default")

	cfg, err = parseFlags([]string{"-faults=pause,overrun"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.faults.on(faultPause))
	assert.True(t, cfg.faults.on(faultOverrun))
	assert.False(t, cfg.faults.on(faultRedisLoss))

	_, err = parseFlags([]string{"-faults=gremlins"}, io.Discard)
	require.ErrorContains(t, err, `unknown fault "gremlins"`)
	_, err = parseFlags([]string{"-ttl", "1ms"}, io.Discard)
	require.Error(t, err)
}

// syncBuffer is an io.Writer the demo writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

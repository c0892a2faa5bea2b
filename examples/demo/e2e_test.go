package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/dashboards"
	"github.com/lockwatch/lockwatch/internal/testenv/integration"
	"github.com/lockwatch/lockwatch/internal/testenv/promtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEndToEndWithPrometheus runs the demo with its faults on, a real
// Prometheus server on loopback scraping it every second with the generated
// alert rules loaded, and then asks Prometheus, through its HTTP API, for
// every expression of every generated dashboard panel (each must return
// data) and for the alerts the demo's faults must trigger (each must
// evaluate to a non-empty result, its rule healthy).
func TestEndToEndWithPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run takes about a minute")
	}
	prometheus := promtest.Prometheus(t)
	rules, err := filepath.Abs("../../alerts/lockwatch.rules.yaml")
	require.NoError(t, err)
	withoutTraceExport(t)
	metricsURL, _ := startDemo(t)

	api := startPrometheus(t, prometheus, hostOf(t, metricsURL), rules)

	// Every dashboard expression, variables replaced as Grafana would with
	// "All" selected and a 1s scrape interval.
	files, err := dashboards.Generate()
	require.NoError(t, err)
	replacer := strings.NewReplacer("$__rate_interval", "20s", "$job", ".*", "$instance", ".*", "$lock_name", ".*")
	var exprs []string
	for name, body := range files {
		var doc any
		require.NoError(t, json.Unmarshal(body, &doc), name)
		for _, e := range collectExprs(doc) {
			exprs = append(exprs, replacer.Replace(e))
		}
	}
	require.NotEmpty(t, exprs)

	// Alerts the demo's faults must trigger: their expressions return series.
	// LockwatchStaleWrite is the ticket for a single stale write: the
	// demo's late holder (fault stale) writes after its lease is lost.
	want := []string{"LockwatchStaleWrite", "LockwatchStaleWriteSpike", "LockwatchFenceRejections", "LockwatchLeasesLost",
		"LockwatchLateCompletions", "LockwatchUnknownAcquiresHigh", "LockwatchRenewalFailuresHigh"}
	alertExpr := map[string]string{}
	loaded := api.rules(t)
	for _, r := range loaded {
		alertExpr[r.Name] = r.Query
	}
	for _, name := range want {
		require.Contains(t, alertExpr, name, "rule not loaded")
		exprs = append(exprs, alertExpr[name])
	}

	// The demo needs a few TTLs for every fault to show: poll until every
	// expression has data, or the budget runs out.
	// (Measured: about a minute, the stale-write spike last; the budget is
	// three times that for a loaded machine.)
	start := time.Now()
	deadline := start.Add(180 * time.Second)
	missing := exprs
	why := map[string]string{}
	for len(missing) > 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
		var still []string
		for _, e := range missing {
			n, err := api.count(e)
			if err != nil || n == 0 {
				still = append(still, e)
				why[e] = fmt.Sprintf("%d series, error %v", n, err)
			}
		}
		missing = still
	}
	for _, e := range missing {
		t.Errorf("no data after %v: %s (%s)", time.Since(start).Round(time.Second), e, why[e])
	}
	t.Logf("every expression had data after %v", time.Since(start).Round(time.Second))

	// Every rule, the triggered ones included, evaluates without error.
	for _, r := range api.rules(t) {
		assert.Equal(t, "ok", r.Health, "rule %s: %s", r.Name, r.LastError)
	}
	assert.GreaterOrEqual(t, len(loaded), len(want))
}

// startDemo runs the demo with its faults on (twice as often as by default)
// and its metrics on a free loopback port, until stop or the end of the
// test; it returns the metrics endpoint's URL. Its traces go where the
// OTEL_EXPORTER_OTLP_* variables say (withoutTraceExport: nowhere); stop
// flushes them.
func startDemo(t *testing.T) (metricsURL string, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := defaultConfig()
	cfg.metrics = "127.0.0.1:0"
	cfg.duration = 0                 // until cancelled
	cfg.ttl = 500 * time.Millisecond // faults come twice as often as by default
	cfg.forcePlain = true
	cfg.plainEvery = time.Hour
	ready := make(chan string, 1)
	cfg.ready = func(u string) { ready <- u }
	demoDone := make(chan error, 1)
	go func() { demoDone <- run(ctx, cfg, io.Discard) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-demoDone:
				assert.NoError(t, err) //nolint:testifylint // in a cleanup that must go on to stop the demo
			case <-time.After(30 * time.Second):
				t.Error("the demo did not stop")
			}
		})
	}
	t.Cleanup(stop)
	select {
	case metricsURL = <-ready:
	case err := <-demoDone:
		t.Fatalf("demo ended before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not start")
	}
	return metricsURL, stop
}

// withoutTraceExport keeps the demo's traces on loopback: nowhere.
func withoutTraceExport(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
}

// hostOf is a URL's host:port.
func hostOf(t *testing.T, u string) string {
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	return parsed.Host
}

// startServer runs bin with args until the test ends, its output in a log
// file that the test prints if it failed, and waits up to wait for ready
// to report true. An exit before that fails the test.
func startServer(t *testing.T, name string, ready func() bool, wait time.Duration, bin string, args ...string) {
	t.Helper()
	logFile, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited //nolint:errcheck // only waits for the exit: Wait reports the Kill above
		_ = logFile.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logFile.Name())
			t.Logf("%s log:\n%s", name, log)
		}
	})
	for deadline := time.Now().Add(wait); !ready(); {
		select {
		case err := <-exited:
			exited <- err // for the clean-up
			t.Fatalf("%s exited at start (%v); see its log", name, err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become ready in %v", name, wait)
		}
	}
}

// collectExprs returns every "expr" string in a dashboard's JSON.
func collectExprs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s, ok := child.(string); ok && k == "expr" && s != "" {
				out = append(out, s)
			} else {
				out = append(out, collectExprs(child)...)
			}
		}
	case []any:
		for _, child := range v {
			out = append(out, collectExprs(child)...)
		}
	}
	return out
}

type promAPI struct{ base string }

// httpClient bounds every call to Prometheus.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// startPrometheus runs a prometheus server on a free loopback port scraping
// target every second with rules loaded, and stops it when the test ends.
func startPrometheus(t *testing.T, bin, target, rules string) promAPI {
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: lockwatch-demo
    static_configs:
      - targets: [%q]
`, rules, target)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600))
	addr := integration.FreeLoopbackAddr(t)
	api := promAPI{base: "http://" + addr}
	ready := func() bool {
		resp, err := httpClient.Get(api.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	startServer(t, "prometheus", ready, 30*time.Second, bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	return api
}

// count runs an instant query and returns how many series it returned.
func (p promAPI) count(query string) (int, error) {
	resp, err := httpClient.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("query %q: %s", query, body.Error)
	}
	return len(body.Data.Result), nil
}

type rule struct {
	Name      string `json:"name"`
	Query     string `json:"query"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	Type      string `json:"type"`
}

// rules returns the alerting rules Prometheus loaded.
func (p promAPI) rules(t *testing.T) []rule { return p.rulesOf(t, "?type=alert") }

// rulesOf returns the rules /api/v1/rules lists with query.
func (p promAPI) rulesOf(t *testing.T, query string) []rule {
	resp, err := httpClient.Get(p.base + "/api/v1/rules" + query)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	var out []rule
	for _, g := range body.Data.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

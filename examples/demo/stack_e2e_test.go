//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/promtest"
)

// TestWholeStack is make e2e's test: one demo, faults on, exporting its
// spans over OTLP/HTTP to a real Jaeger (v2, in memory, on loopback) and
// scraped every second by a real Prometheus on loopback with the generated
// rules loaded. Two checks share that stack, in this order: pint online
// against the Prometheus (pintOnline), then the traces behind the scrape's
// exemplars, read through Jaeger's query API (tracesInJaeger), which stops
// the demo to flush its spans. make e2e builds Jaeger (tools/jaeger) and
// pint (tools/pint) and sets LOCKWATCH_JAEGER and LOCKWATCH_PINT, and
// LOCKWATCH_PINT_ARGS to make pint's arguments after --offline.
func TestWholeStack(t *testing.T) {
	pint, pintArgs := os.Getenv("LOCKWATCH_PINT"), strings.Fields(os.Getenv("LOCKWATCH_PINT_ARGS"))
	if pint == "" || len(pintArgs) == 0 {
		t.Fatal("LOCKWATCH_PINT or LOCKWATCH_PINT_ARGS is not set: run make e2e, which builds pint from tools/pint and passes make pint's arguments")
	}
	prometheus := promtest.Prometheus(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)

	jaeger := startJaeger(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.otlp)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "lockwatch-demo")
	// A queue large enough that the batcher drops nothing the checks read,
	// and frequent exports so that traces show up while the demo runs.
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "200000")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "500")
	metricsURL, stopDemo := startDemo(t)
	api := startPrometheus(t, prometheus, hostOf(t, metricsURL), filepath.Join(root, "alerts", "lockwatch.rules.yaml"))

	t.Run("pint online", func(t *testing.T) { pintOnline(t, pint, pintArgs, root, api) })
	t.Run("traces in Jaeger", func(t *testing.T) { tracesInJaeger(t, jaeger, metricsURL, stopDemo) })
}

//go:build e2e

package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pintOnline runs pint online against a real Prometheus that scrapes the
// demo with the generated rules loaded. Once every series selector of every
// rule (the recorded series included) has data, it lints
// alerts/lockwatch.rules.yaml with make pint's args but without --offline,
// .pint.hcl's "e2e" server pointed at that Prometheus through
// LOCKWATCH_PINT_PROMETHEUS: promql/series then checks that every series a
// rule names exists, with the label values it matches, and the other online
// checks (promql/rate, promql/counter, …) run too.
func pintOnline(t *testing.T, pint string, args []string, root string, api promAPI) {
	// Every selector of every loaded rule, recording rules included (the
	// alerts read their series, which need a few evaluations).
	var selectors []string
	seen := map[string]bool{}
	loaded := api.allRules(t)
	require.NotEmpty(t, loaded, "no rules loaded")
	for _, r := range loaded {
		for _, s := range selectorPattern.FindAllString(r.Query, -1) {
			if !seen[s] {
				seen[s] = true
				selectors = append(selectors, s)
			}
		}
	}
	require.NotEmpty(t, selectors)
	sort.Strings(selectors)

	// Measured: about a minute (the faults' label values come last); the
	// budget is three times that for a loaded machine.
	start := time.Now()
	missing := selectors
	for deadline := start.Add(180 * time.Second); len(missing) > 0 && time.Now().Before(deadline); {
		time.Sleep(2 * time.Second)
		var still []string
		for _, s := range missing {
			if n, err := api.count(s); err != nil || n == 0 {
				still = append(still, s)
			}
		}
		missing = still
	}
	if len(missing) > 0 {
		t.Errorf("no data after %v for %q", time.Since(start).Round(time.Second), missing)
	} else {
		t.Logf("all %d selectors of %d rules had data after %v", len(selectors), len(loaded), time.Since(start).Round(time.Second))
	}

	// pint judges even when a selector is missing: its report says why.
	cmd := exec.Command(pint, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "LOCKWATCH_PINT_PROMETHEUS="+api.base)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("pint online against %s:\n%s", api.base, out.String())
	require.NoError(t, err, "pint online found problems (output above)")
}

// selectorPattern matches a vector selector with label matchers, as every
// selector of the generated rules has (job=~".+" at least).
var selectorPattern = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\{[^{}]*\}`)

// allRules returns every rule Prometheus loaded, recording and alerting.
func (p promAPI) allRules(t *testing.T) []rule { return p.rulesOf(t, "") }

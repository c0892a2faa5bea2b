package alerts_test

import (
	"bufio"
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockwatch/lockwatch/alerts"
)

// TestEveryAlertHasFiringAndSilentCases: the committed promtool tests have,
// for every alert, a case that expects it to fire (with labels, including
// severity, and all three annotations) and a case that expects silence.
func TestEveryAlertHasFiringAndSilentCases(t *testing.T) {
	var tests testFile
	require.NoError(t, yaml.Unmarshal(read(t, alerts.TestsFile), &tests))
	assert.Equal(t, []string{alerts.RulesFile}, tests.RuleFiles)

	fires, silent := map[string]int{}, map[string]int{}
	for _, g := range tests.Tests {
		for _, art := range g.AlertRuleTests {
			if len(art.ExpAlerts) == 0 {
				silent[art.Alertname]++
				continue
			}
			fires[art.Alertname]++
			for _, exp := range art.ExpAlerts {
				assert.NotEmpty(t, exp.ExpLabels["severity"], "%s: %s", g.Name, art.Alertname)
				for _, key := range []string{"summary", "description", "runbook_url"} {
					assert.NotEmpty(t, exp.ExpAnnotations[key], "%s: %s: %s", g.Name, art.Alertname, key)
				}
				assert.NotContains(t, exp.ExpAnnotations["description"], "{{", "expected annotations are expanded")
			}
		}
	}
	rules := decodeRules(t, read(t, alerts.RulesFile))
	for _, r := range rules {
		assert.Positive(t, fires[r.Alert], "%s has no firing case", r.Alert)
		assert.Positive(t, silent[r.Alert], "%s has no silent case", r.Alert)
		delete(fires, r.Alert)
		delete(silent, r.Alert)
	}
	assert.Empty(t, fires, "cases for alerts that do not exist")
	assert.Empty(t, silent, "cases for alerts that do not exist")
}

// TestRulesFollowConventions: monitoring-mixin style, checked on the file.
func TestRulesFollowConventions(t *testing.T) {
	name := regexp.MustCompile(`^Lockwatch[A-Z][A-Za-z0-9]*$`)
	critical := 0
	for _, r := range decodeRules(t, read(t, alerts.RulesFile)) {
		assert.Regexp(t, name, r.Alert)
		assert.NotEmpty(t, r.For, r.Alert)
		assert.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], r.Alert)
		assert.NotContains(t, r.Annotations["summary"], "{{", "%s: the summary is static", r.Alert)
		assert.Contains(t, r.Annotations["description"], "$value", r.Alert)
		assert.Contains(t, r.Annotations["description"], "$labels.", r.Alert)
		window := "5m"
		if r.Alert == "LockwatchStaleWrite" {
			window = "1h" // one stale write keeps its ticket open for an hour
		}
		for _, w := range regexp.MustCompile(`(?:rate|increase)\([^\[]*\[([^\]]*)\]`).FindAllStringSubmatch(r.Expr, -1) {
			assert.Equal(t, window, w[1], "%s: rates and increases over %s", r.Alert, window)
		}
		if r.Labels["severity"] == "critical" {
			critical++
			assert.Equal(t, "LockwatchStaleWriteSpike", r.Alert, "the stale-write spike is the only page")
		}
		if strings.Contains(r.Expr, "/") {
			assert.Regexp(t, `/\s*\(.*> 0\)`, r.Expr, "%s: a ratio's denominator is guarded against zero", r.Alert)
		}
	}
	assert.Equal(t, 1, critical)
}

// TestLossesExcludeShutdown: Locker.Close's losses (reason closed) are a
// graceful shutdown, and a shared lease's readers yield to a writer by
// design (reason yielded); no expression on losses may count them.
func TestLossesExcludeShutdown(t *testing.T) {
	for _, r := range decodeRules(t, read(t, alerts.RulesFile)) {
		if strings.Contains(r.Expr, "_losses_total") {
			assert.Contains(t, r.Expr, `reason!~"closed|yielded"`, r.Alert)
		}
	}
}

// TestRunbookAnchors: every runbook_url, in the Prometheus and the Grafana
// rules, points at a heading of RUNBOOK.md, and every section states its
// alert's severity, threshold and for duration as the rules have them.
func TestRunbookAnchors(t *testing.T) {
	sections := runbookSections(t, read(t, "RUNBOOK.md"))
	rules := decodeRules(t, read(t, alerts.RulesFile))
	urls := map[string]string{}
	for _, r := range rules {
		urls[r.Alert] = r.Annotations["runbook_url"]
	}
	for _, r := range grafanaRules(t, read(t, alerts.GrafanaFile)) {
		assert.Equal(t, urls[r.Title], r.Annotations["runbook_url"], r.Title)
	}

	for _, r := range rules {
		u, err := url.Parse(r.Annotations["runbook_url"])
		require.NoError(t, err, r.Alert)
		assert.Equal(t, alerts.DefaultRunbookURL, strings.TrimSuffix(u.String(), "#"+u.Fragment), r.Alert)
		section, ok := sections[u.Fragment]
		if !assert.True(t, ok, "%s: RUNBOOK.md has no heading with anchor #%s", r.Alert, u.Fragment) {
			continue
		}
		_, threshold := splitThreshold(t, r.Expr)
		for _, want := range []string{"`" + r.Labels["severity"] + "`", "`> " + threshold + "`", "`" + r.For + "`"} {
			assert.Contains(t, section, want, "RUNBOOK.md#%s does not state %s", u.Fragment, want)
		}
		delete(sections, u.Fragment)
	}
	alertAnchor := regexp.MustCompile(`^lockwatch[a-z0-9]+$`)
	for anchor := range sections {
		assert.NotRegexp(t, alertAnchor, anchor, "RUNBOOK.md#%s documents an alert that does not exist", anchor)
	}
}

// runbookSections maps the GitHub anchor of every heading to the text of
// its section.
func runbookSections(t *testing.T, md []byte) map[string]string {
	t.Helper()
	sections := map[string]string{}
	var current string
	var body strings.Builder
	flush := func() {
		if current != "" {
			sections[current] = body.String()
		}
		body.Reset()
	}
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			flush()
			current = githubAnchor(strings.TrimLeft(line, "# "))
			_, dup := sections[current]
			require.False(t, dup, "RUNBOOK.md: two headings with anchor #%s", current)
			continue
		}
		body.WriteString(line + "\n")
	}
	require.NoError(t, sc.Err())
	flush()
	return sections
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestEveryRecordingRuleIsTested: every recording rule has a promtool
// promql_expr_test that evaluates the recorded series and expects samples of
// it, and is named level:metric:operations, the level being the labels its
// aggregation keeps (the monitoring-mixin convention).
func TestEveryRecordingRuleIsTested(t *testing.T) {
	var tests testFile
	require.NoError(t, yaml.Unmarshal(read(t, alerts.TestsFile), &tests))
	tested := map[string]int{}
	for _, g := range tests.Tests {
		for _, et := range g.ExprTests {
			require.NotEmpty(t, et.ExpSamples, "%s: expects no sample", g.Name)
			for _, s := range et.ExpSamples {
				assert.True(t, strings.HasPrefix(s.Labels, et.Expr+"{"), "%s: sample %s is not of %s", g.Name, s.Labels, et.Expr)
			}
			tested[et.Expr]++
		}
	}
	recordings := decodeRecordings(t, read(t, alerts.RulesFile))
	require.NotEmpty(t, recordings)
	name := regexp.MustCompile(`^([a-z_]+):lockwatch_[a-z_]+:[a-z0-9_]+$`)
	by := regexp.MustCompile(`^sum by \(([^)]*)\)`)
	recordedSeries := regexp.MustCompile(`[a-z_]+:lockwatch_[a-z_]+:[a-z0-9_]+`)
	earlier := map[string]bool{}
	for _, r := range recordings {
		// The group runs its rules in order: a ratio reads the rates of
		// the same evaluation only if they are recorded before it.
		for _, read := range recordedSeries.FindAllString(r.Expr, -1) {
			assert.True(t, earlier[read], "%s reads %s, which is not recorded before it", r.Record, read)
		}
		earlier[r.Record] = true
		assert.Positive(t, tested[r.Record], "%s has no promql_expr_test", r.Record)
		delete(tested, r.Record)
		m := name.FindStringSubmatch(r.Record)
		if !assert.NotNil(t, m, "%s is not level:lockwatch_metric:operations", r.Record) {
			continue
		}
		kept := by.FindStringSubmatch(r.Expr)
		if assert.NotNil(t, kept, "%s: not an aggregation: %s", r.Record, r.Expr) {
			assert.Equal(t, strings.ReplaceAll(kept[1], ", ", "_"), m[1], "%s: the level is the labels kept", r.Record)
		}
		for _, w := range regexp.MustCompile(`(?:rate|increase)\([^\[]*\[([^\]]*)\]`).FindAllStringSubmatch(r.Expr, -1) {
			assert.Equal(t, "5m", w[1], "%s: rates over 5 minutes", r.Record)
		}
		if strings.Contains(r.Expr, "/") {
			assert.Regexp(t, `/\s*\(.*> 0\)`, r.Expr, "%s: a ratio's denominator is guarded against zero", r.Record)
		}
	}
	assert.Empty(t, tested, "promql_expr_test of series no rule records")
}

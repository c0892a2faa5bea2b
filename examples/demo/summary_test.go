package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summaryRowRe is a summary row's first line: its label, its total (a
// sub-row has none) and the start of its detail.
var summaryRowRe = regexp.MustCompile(`^ {2,4}(\S(?:.*?\S)?) {2,}(?:(\d+)   )?(.*)$`)

// summaryValueRe is one value in a row's detail, by name: acquired 12 in
// "acquired 12", accepted 7 in "at the ledger: accepted 7".
var summaryValueRe = regexp.MustCompile(`([a-z_]+) (\d+)$`)

// summaryRow is one row of the printed summary: its total ("" for a
// sub-row) and the values its detail names, in order.
type summaryRow struct {
	total  string
	names  []string
	values map[string]int // by name; a name given twice keeps its first
}

// summaryRows reads the summary table the demo printed, by row label.
func summaryRows(t *testing.T, text string) map[string]*summaryRow {
	t.Helper()
	i, j := strings.Index(text, "Summary after"), strings.Index(text, "The lease, fence and election rows")
	require.True(t, i >= 0 && j > i, "a summary table")
	rows := map[string]*summaryRow{}
	var row *summaryRow
	for _, line := range strings.Split(text[i:j], "\n")[1:] {
		detail := line
		if m := summaryRowRe.FindStringSubmatch(line); m != nil {
			row = &summaryRow{total: m[2], values: map[string]int{}}
			rows[m[1]], detail = row, m[3]
		}
		for _, part := range strings.Split(detail, "·") {
			m := summaryValueRe.FindStringSubmatch(strings.TrimSpace(part))
			if m == nil || row == nil {
				continue
			}
			n, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			row.names = append(row.names, m[1])
			if _, seen := row.values[m[1]]; !seen {
				row.values[m[1]] = n
			}
		}
	}
	return rows
}

// count is a row's total, 0 when it has none.
func (r *summaryRow) count(t *testing.T) int {
	t.Helper()
	if r == nil || r.total == "" {
		return 0
	}
	n, err := strconv.Atoi(r.total)
	require.NoError(t, err)
	return n
}

// readmeSummaryTable reads the README's table of the demo's summary rows:
// each row's line by its label, the first cell's code span.
func readmeSummaryTable(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, table, found := strings.Cut(string(readme), "| summary row |")
	require.True(t, found, "README has the demo's summary table")
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|.*$").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = m[0]
	}
	return rows
}

// summaryInReadme checks that the README's table explains every row of
// the summary in text, every value named in a row's detail, and every
// way a request can end, and no row the demo does not print.
func summaryInReadme(t *testing.T, text string) {
	readme := readmeSummaryTable(t)
	printed := summaryRows(t, text)
	require.NotEmpty(t, printed)
	for label, r := range printed {
		row, ok := readme[label]
		if !assert.True(t, ok, "README's summary table has no row %q", label) {
			continue
		}
		for _, name := range r.names {
			assert.Contains(t, row, name+"`", "README's row %q does not explain %q", label, name)
		}
	}
	for label := range readme {
		assert.Contains(t, printed, label, "README explains a row %q the summary does not print", label)
	}
	for _, name := range outcomeNames {
		assert.Contains(t, readme["answered"], "`"+name+"`", "README's answered row does not explain %q", name)
	}
	summaryAddsUp(t, printed)
}

// summaryAddsUp checks the relations between rows that README's summary
// table states.
func summaryAddsUp(t *testing.T, rows map[string]*summaryRow) {
	val := func(label, name string) int {
		if r := rows[label]; r != nil {
			return r.values[name]
		}
		return 0
	}
	assert.LessOrEqual(t, val("answered", "unavailable"), val("lease acquires", "error"),
		"every unavailable answer is an acquire's error")
	assert.Equal(t, val("fence checks", "rejected"), rows["stale writes rejected"].count(t),
		"the stale writes rejected are the fence checks rejected")
	assert.LessOrEqual(t, val("commits", "stale"), rows["stale writes rejected"].count(t),
		"a commit's stale write is one the ledger rejected")
	assert.Equal(t, rows["leases lost"].count(t), rows["cancellation latency"].count(t),
		"every loss's work ends, and its latency is measured")
	assert.Equal(t, rows["job leader terms"].count(t), val("job leader terms", "resigned")+val("job leader terms", "lost"),
		"every term started ends, resigned or lost")
}

package model

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(string(b), "\n")
}

// TestReliabilityPointsAtTheInvariants holds RELIABILITY.md's section "The
// model" to lease.pml: each link to a line of the model lands on the inline
// of the invariant it names, and each invariant of the model is linked.
func TestReliabilityPointsAtTheInvariants(t *testing.T) {
	model := readLines(t, "lease.pml")
	doc, err := os.ReadFile("../RELIABILITY.md")
	require.NoError(t, err)

	linked := map[string]bool{}
	for _, m := range regexp.MustCompile("\\[`(\\w+)`\\]\\(model/lease\\.pml#L(\\d+)\\)").FindAllStringSubmatch(string(doc), -1) {
		n, _ := strconv.Atoi(m[2])
		require.True(t, n >= 1 && n <= len(model), "RELIABILITY.md links %s to line %d, past the model's end", m[1], n)
		assert.True(t, strings.HasPrefix(model[n-1], "inline "+m[1]+"("),
			"RELIABILITY.md links %s to lease.pml:%d, which is %q", m[1], n, model[n-1])
		linked[m[1]] = true
	}

	var in bool
	var invariants []string
	for _, line := range model {
		switch {
		case strings.Contains(line, "==== Invariants"):
			in = true
		case strings.Contains(line, "===="):
			in = false
		case in && strings.HasPrefix(line, "inline "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "inline "), "(")
			invariants = append(invariants, name)
		}
	}
	require.NotEmpty(t, invariants)
	for _, inv := range invariants {
		assert.True(t, linked[inv], "RELIABILITY.md does not map a guarantee to the invariant %s", inv)
	}
}

// TestEveryMutantIsInTheModelAndTheReadme: each name of MUTANTS is a
// switch of lease.pml that picks its scenario, and has its row in
// README.md's table.
func TestEveryMutantIsInTheModelAndTheReadme(t *testing.T) {
	model, err := os.ReadFile("lease.pml")
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var names []string
	for _, line := range readLines(t, "MUTANTS") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	require.GreaterOrEqual(t, len(names), 8)
	for _, name := range names {
		assert.Contains(t, string(model), "defined("+name+")", "%s picks no scenario in lease.pml", name)
		switches := regexp.MustCompile(`(?m)^#if.*\b`+name+`\b`).FindAllString(string(model), -1)
		assert.GreaterOrEqual(t, len(switches), 2, "%s switches nothing in lease.pml beyond its scenario", name)
		assert.Contains(t, string(readme), "| `"+name+"` |", "README.md's table has no row for %s", name)
	}
}

package redisacl

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// securitySection returns the section "Redis ACLs" of SECURITY.md, up to
// the next section of its level.
func securitySection(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../../SECURITY.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(doc), "\n## Redis ACLs\n")
	require.True(t, found, "SECURITY.md has a section \"## Redis ACLs\"")
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// TestSecurityMDShowsTheRules: the ACL SETUSER lines of SECURITY.md's
// section are the rules the ACL tests apply, all of them and no other, and
// the section says what each grant is for.
func TestSecurityMDShowsTheRules(t *testing.T) {
	section := securitySection(t)
	var shown []string
	for line := range strings.Lines(section) {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "ACL SETUSER ") {
			shown = append(shown, line)
		}
	}
	assert.Equal(t, Documented(), shown, "SECURITY.md's rules are internal/testenv/redisacl's")

	// The table of grants: each row's first cell names grants in
	// backquotes.
	explained := map[string]bool{}
	for line := range strings.Lines(section) {
		// A bar in a cell is escaped (\|).
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		if len(cells) > 3 && strings.TrimSpace(cells[0]) == "" {
			first := strings.ReplaceAll(cells[1], "\x00", "|")
			for i, g := range strings.Split(first, "`") {
				if i%2 == 1 {
					explained[g] = true
				}
			}
		}
	}
	for _, rs := range [][]string{Locker(LeaseNamespace), Operator(LeaseNamespace), Store(StoreNamespace), FenceOperator(LeaseNamespace, StoreNamespace), Cluster} {
		for _, r := range rs {
			if strings.ContainsAny(r[:1], "+~&") {
				assert.True(t, explained[r], "the table of grants explains %s", r)
			}
		}
	}
}

func TestEscape(t *testing.T) {
	assert.Equal(t, "lockwatch", Escape("lockwatch"))
	assert.Equal(t, `jobs\*`, Escape("jobs*"))
	assert.Equal(t, `a\?\[b\]\\`, Escape(`a?[b]\`))
}

func TestWithout(t *testing.T) {
	assert.Equal(t, []string{"reset", "+get"}, Without([]string{"reset", "+set", "+get", "+del"}, "+set", "+del"))
}

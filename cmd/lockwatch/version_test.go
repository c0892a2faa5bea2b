package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatVersion(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "33ea417c4f2a9d8e0b1c"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install of a tag", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.0"}}, "lockwatch v1.4.0 (go1.26.0)"},
		{"a pseudo-version", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261203001748-33ea417c4f2a"}, Settings: vcs},
			"lockwatch v0.0.0-20261203001748-33ea417c4f2a (go1.26.0)"},
		{"devel with its commit", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"lockwatch (devel) commit 33ea417c4f2a with local changes (go1.26.0)"},
		{"devel alone", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "lockwatch (devel) (go1.26.0)"},
		{"no version", debug.BuildInfo{GoVersion: "go1.26.0"}, "lockwatch (devel) (go1.26.0)"},
	} {
		assert.Equal(t, tc.want, formatVersion(&tc.bi), tc.name)
	}
}

// TestVersion: --version, -version and version print the module version
// the binary carries, as go version -m reads it.
func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	require.NoError(t, err)
	var mod string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "mod" {
			mod = f[2]
		}
	}
	require.NotEmpty(t, mod, "%s", out)
	var first string
	for _, arg := range []string{"--version", "-version", "version"} {
		code, stdout, stderr := lockwatchRun(t, arg)
		require.Equal(t, exitOK, code, stderr)
		assert.Empty(t, stderr)
		assert.True(t, strings.HasPrefix(stdout, "lockwatch "+mod+" "), "%s: %q, go version -m: %s", arg, stdout, mod)
		if first == "" {
			first = stdout
		}
		assert.Equal(t, first, stdout, arg)
	}
}

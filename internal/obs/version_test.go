package obs

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModuleVersion(t *testing.T) {
	dep := func(path, version string) *debug.Module { return &debug.Module{Path: path, Version: version} }
	replaced := dep(ScopeName, "v0.3.0")
	replaced.Replace = dep("example.com/fork", "v0.3.1-fork")
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "(devel)"},
		{"lockwatch is the main module", &debug.BuildInfo{Main: *dep(ScopeName, "(devel)")}, "(devel)"},
		{"a dependency", &debug.BuildInfo{Main: *dep("example.com/svc", "(devel)"), Deps: []*debug.Module{dep("example.com/other", "v1.0.0"), dep(ScopeName, "v0.4.2")}}, "v0.4.2"},
		{"a replaced dependency", &debug.BuildInfo{Main: *dep("example.com/svc", ""), Deps: []*debug.Module{replaced}}, "v0.3.1-fork"},
		{"a replacement by a directory", &debug.BuildInfo{Main: *dep("example.com/svc", ""), Deps: []*debug.Module{{Path: ScopeName, Version: "v0.4.2", Replace: &debug.Module{Path: "../lockwatch"}}}}, "(devel)"},
		{"not in the build", &debug.BuildInfo{Main: *dep("example.com/svc", "v1.0.0")}, "(devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, moduleVersion(tc.info)) })
	}
}

// TestVersionOfThisBuild: a test of lockwatch's own module is a build of
// it, which records no version.
func TestVersionOfThisBuild(t *testing.T) {
	assert.Equal(t, "(devel)", Version)
}

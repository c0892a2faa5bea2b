package redistest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// recordingTB stands in for testing.T so that Require's skip and fatal paths
// can be observed without ending the real test.
type recordingTB struct {
	testing.TB
	skipped, fatal bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Skipf(string, ...any)  { r.skipped = true }
func (r *recordingTB) Fatalf(string, ...any) { r.fatal = true }

func TestRequireWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		env                string
		wantSkip, wantFail bool
	}{
		{env: "", wantSkip: true},
		{env: "0", wantSkip: true},
		{env: "1", wantFail: true},
	} {
		t.Run("LOCKWATCH_REQUIRE_INTEGRATION="+tc.env, func(t *testing.T) {
			t.Setenv("LOCKWATCH_REQUIRE_INTEGRATION", tc.env)
			rec := &recordingTB{TB: t}
			redistest.Require(rec)
			assert.Equal(t, tc.wantSkip, rec.skipped, "skipped")
			assert.Equal(t, tc.wantFail, rec.fatal, "failed")
		})
	}
}

func TestRequireWithRedisServer(t *testing.T) {
	redistest.Require(t)
	rec := &recordingTB{TB: t}
	redistest.Require(rec)
	assert.False(t, rec.skipped)
	assert.False(t, rec.fatal)
}

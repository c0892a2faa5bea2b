package redistest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// fatalTB records Fatalf instead of ending the test, so the message Start
// would fail with can be inspected.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	if f.msg == "" {
		f.msg = fmt.Sprintf(format, args...)
	}
}

func TestStartFailureShowsLogTail(t *testing.T) {
	t.Parallel()
	redistest.Require(t)
	rec := &fatalTB{TB: t}
	s := redistest.Start(rec, "--no-such-directive", "1")
	assert.Nil(t, s)
	require.NotEmpty(t, rec.msg)
	assert.Contains(t, rec.msg, "tail of")
	assert.Contains(t, rec.msg, "no-such-directive", "the log tail names the cause")
}

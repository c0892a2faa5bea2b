package debugpage

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHuman: durations as people read them.
func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Second, "0s"},
		{850 * time.Microsecond, "850µs"},
		{time.Millisecond, "1ms"},
		{1230 * time.Microsecond, "1.23ms"},
		{12300 * time.Microsecond, "12.3ms"},
		{850 * time.Millisecond, "850ms"},
		{time.Second, "1s"},
		{1234 * time.Millisecond, "1.23s"},
		{1500 * time.Millisecond, "1.5s"},
		{42 * time.Second, "42s"},
		{4*time.Minute + 5*time.Second, "4m05s"},
		{2*time.Hour + 10*time.Minute + 20*time.Second, "2h10m"},
	} {
		assert.Equal(t, tc.want, human(tc.d), "%v", tc.d)
	}
}

// TestMillisJSON: durations in the JSON are milliseconds to the
// microsecond.
func TestMillisJSON(t *testing.T) {
	b, err := json.Marshal([]millis{0, millis(850 * time.Microsecond), millis(1234567 * time.Microsecond), millis(1500 * time.Nanosecond)})
	require.NoError(t, err)
	assert.JSONEq(t, `[0, 0.85, 1234.567, 0.001]`, string(b))
}

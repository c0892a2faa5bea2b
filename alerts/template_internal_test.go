package alerts

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHumanize: the formatting functions write what Prometheus's do (the
// promtool tests prove it for the values they use; these pin the rest).
func TestHumanize(t *testing.T) {
	for _, c := range []struct {
		f    func(float64) string
		in   float64
		want string
	}{
		{humanize, 0, "0"},
		{humanize, 5, "5"},
		{humanize, 1234567, "1.235M"},
		{humanize, 0.0033, "3.3m"},
		{humanize, math.NaN(), "NaN"},
		{humanizeDuration, 0, "0s"},
		{humanizeDuration, 2.425, "2.425s"},
		{humanizeDuration, 899.99, "14m 59s"},
		{humanizeDuration, 90061, "1d 1h 1m 1s"},
		{humanizeDuration, 0.0005, "500us"},
	} {
		assert.Equal(t, c.want, c.f(c.in), "%v", c.in)
	}

	got, err := expand(`{{ $value | humanizePercentage }} of {{ $labels.lock_name }}{{ $labels.missing }}`, map[string]string{"lock_name": "x"}, 0.1234567)
	require.NoError(t, err)
	assert.Equal(t, "12.35% of x", got)
}

// TestGrafanaTemplate: $value becomes the reduce step's value; $values and
// $labels stay.
func TestGrafanaTemplate(t *testing.T) {
	assert.Equal(t,
		`{{ $values.B.Value | humanize }} {{ $labels.job }} {{ $values.A.Value }}`,
		grafanaTemplate(`{{ $value | humanize }} {{ $labels.job }} {{ $values.A.Value }}`))
}

package middleware

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
)

func TestParseValues(t *testing.T) {
	_, err := parseValues(nil)
	require.ErrorIs(t, err, errMissing)
	_, err = parseValues([]string{"41", "42"})
	require.ErrorIs(t, err, fence.ErrMalformed)
	_, err = parseValues([]string{"041"})
	require.ErrorIs(t, err, fence.ErrMalformed, "one value, in Parse's form")
	got, err := parseValues([]string{"42"})
	require.NoError(t, err)
	assert.Equal(t, fence.Token(42), got)
}

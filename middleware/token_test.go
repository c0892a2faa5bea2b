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
	_, err = parseValues([]string{wire("7", 41), wire("7", 42)})
	require.ErrorIs(t, err, fence.ErrMalformed)
	_, err = parseValues([]string{"42", wire("7", 42)})
	require.ErrorIs(t, err, fence.ErrMalformed, "the old and the new form side by side")
	_, err = parseValues([]string{"041"})
	require.ErrorIs(t, err, fence.ErrMalformed, "one value, in Parse's form")
	got, err := parseValues([]string{wire("7", 42)})
	require.NoError(t, err)
	assert.Equal(t, mint("7", 42), got)
	got, err = parseValues([]string{"42"})
	require.NoError(t, err, "a bare number parses: the store, not the parser, refuses it")
	assert.Equal(t, fence.Token{Fence: 42}, got)
	assert.True(t, got.IsPlain())
}

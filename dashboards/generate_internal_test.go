package dashboards

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unescapeHTML only changes how <, > and & are written: every string
// decodes to what it was, an escaped backslash before "u003e" included.
func TestUnescapeHTML(t *testing.T) {
	for _, s := range []string{
		`rate(x[5m]) >= 0 < 1 & 2`,
		`a backslash then u003e: \u003e`,
		`\\u003e \"quoted\" \n tab	end`,
		"",
	} {
		raw, err := json.Marshal(s)
		require.NoError(t, err)
		got := unescapeHTML(raw)
		var back string
		require.NoError(t, json.Unmarshal(got, &back), "%s", got)
		assert.Equal(t, s, back)
	}
	assert.Equal(t, `"a >= b && c < d"`, string(unescapeHTML([]byte(`"a \u003e= b \u0026\u0026 c \u003c d"`))))
}

package dashboards_test

import (
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"go.uber.org/goleak"
)

// The tests start promtool and nothing else; goleak proves no goroutine of
// theirs (or of the SDK) outlives them. The SDK decodes panels and queries
// through its plugin registry, filled once here.
func TestMain(m *testing.M) {
	plugins.RegisterDefaultPlugins()
	goleak.VerifyTestMain(m)
}
